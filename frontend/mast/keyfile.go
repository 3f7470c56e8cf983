package mast

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// KeyFile is the device key as the daemon keeps it: {deviceKey, pairedAt},
// readable by its user alone (0600).
type KeyFile struct {
	DeviceKey string `json:"deviceKey"`
	PairedAt  string `json:"pairedAt"`
}

// LoadKey reads the device key at path; a missing file is "" and no error.
func LoadKey(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("mast: device key: %w", err)
	}
	var k KeyFile
	if err := json.Unmarshal(data, &k); err != nil || k.DeviceKey == "" {
		return "", fmt.Errorf("mast: device key file %s is not {\"deviceKey\": …}: %v", filepath.Base(path), err)
	}
	return k.DeviceKey, nil
}

// SaveKey writes the key to path, mode 0600, atomically.
func SaveKey(path, key string, now time.Time) error {
	data, err := json.Marshal(KeyFile{DeviceKey: key, PairedAt: Timestamp(now)})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("mast: device key: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".device-key-*")
	if err != nil {
		return fmt.Errorf("mast: device key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("mast: device key: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("mast: device key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("mast: device key: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("mast: device key: %w", err)
	}
	return nil
}

// cursor is where the event stream stopped, kept across restarts so an
// orchestrator that sends no sync_request still gets what came after.
type cursor struct {
	Pos uint64 `json:"pos"`
}

func loadCursor(path string) (uint64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	var c cursor
	if json.Unmarshal(data, &c) != nil {
		return 0, false
	}
	return c.Pos, true
}

func saveCursor(path string, pos uint64) error {
	data, _ := json.Marshal(cursor{Pos: pos})
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
