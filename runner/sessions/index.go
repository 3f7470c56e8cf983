package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// index keeps each session's record in a file of its own (<dir>/<id>.json,
// replaced whole on every change), so a restarted runner still lists its
// sessions, serves their logged events, and knows which ones it left
// running. A nil index keeps nothing.
type index struct{ dir string }

func openIndex(dir string) (*index, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sessions: index: %w", err)
	}
	return &index{dir: dir}, nil
}

// save records info; the write is atomic (a temporary file renamed over
// the old one), so a crash leaves the old record or the new, never half.
func (x *index) save(rec record) error {
	if x == nil {
		return nil
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(x.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("sessions: index: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("sessions: index: %w", err)
	}
	if err := tmp.Sync(); err != nil { // the rename must not outlive the content
		tmp.Close()
		return fmt.Errorf("sessions: index: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("sessions: index: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(x.dir, rec.ID+".json")); err != nil {
		return fmt.Errorf("sessions: index: %w", err)
	}
	return nil
}

// remove forgets a session's record; one that is not there is no error.
func (x *index) remove(id string) {
	if x == nil {
		return
	}
	_ = os.Remove(filepath.Join(x.dir, id+".json"))
}

// load reads every record. A record that cannot be read is reported in
// the error and skipped; the others still load.
func (x *index) load() ([]record, error) {
	if x == nil {
		return nil, nil
	}
	entries, err := os.ReadDir(x.dir)
	if err != nil {
		return nil, fmt.Errorf("sessions: index: %w", err)
	}
	var out []record
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(x.dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var rec record
		if err == nil {
			err = json.Unmarshal(data, &rec)
		}
		if err == nil && rec.ID+".json" != name {
			err = errors.New("its id is not its name")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("sessions: index record %s: %w", name, err))
			continue
		}
		out = append(out, rec)
	}
	return out, errors.Join(errs...)
}
