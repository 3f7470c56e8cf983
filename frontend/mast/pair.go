package mast

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"

	"github.com/coder/websocket"
)

// pair gets a device key: a six-digit code on the pairing socket, shown
// to the user, who confirms it to the orchestrator; the key comes back in
// pair_response and is saved.
func (d *Daemon) pair(ctx context.Context) (string, error) {
	conn, err := d.dial(ctx, "pairing")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrPairing, err)
	}
	defer conn.CloseNow()
	n, err := rand.Int(rand.Reader, big.NewInt(900000))
	if err != nil {
		return "", err
	}
	code := fmt.Sprintf("%06d", 100000+n.Int64())
	ctx, cancel := context.WithTimeout(ctx, d.cfg.PairTimeout)
	defer cancel()
	if err := writeJSON(ctx, conn, PairRequest{Type: "pair_request", PairingCode: code, Hostname: d.cfg.Hostname}); err != nil {
		return "", fmt.Errorf("%w: %w", ErrPairing, err)
	}
	if d.cfg.ShowPairingCode != nil {
		d.cfg.ShowPairingCode(code)
	} else {
		d.log.Info("pairing: confirm this code with the orchestrator", "code", code)
	}
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return "", fmt.Errorf("%w: waiting for the code's confirmation: %w", ErrPairing, err)
		}
		c, err := ParseCommand(data)
		if err != nil || c.Type != framePairResponse {
			continue
		}
		if !c.Success || c.DeviceKey == "" {
			return "", fmt.Errorf("%w: the orchestrator said %q", ErrPairing, c.Error)
		}
		if err := SaveKey(d.cfg.KeyFile, c.DeviceKey, d.cfg.Now()); err != nil {
			return "", err
		}
		_ = conn.Close(websocket.StatusNormalClosure, "paired")
		d.log.Info("paired with the orchestrator")
		return c.DeviceKey, nil
	}
}
