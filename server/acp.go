package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

// ACPConfig configures the local core of `tether acp`.
type ACPConfig struct {
	// Agent is the agent kind (driver.Names); CLI its CLI (empty: looked
	// up as tether serve does).
	Agent, CLI string
	// DataDir keeps the sessions, their events and approvals across
	// editor restarts (DefaultACPDataDir when empty).
	DataDir string
	Logger  *slog.Logger
}

// DefaultACPDataDir is the per-user state directory of `tether acp`:
// $XDG_STATE_HOME/tether/acp, else ~/.local/state/tether/acp.
func DefaultACPDataDir() (string, error) {
	if dir := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "tether", "acp"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("server: no data directory for tether acp: %w", err)
	}
	return filepath.Join(home, ".local", "state", "tether", "acp"), nil
}

// ACPLocal is the local core of `tether acp`: the agent's driver, made
// when it starts (so a missing CLI stops it at once), and a core for each
// workspaces root its editor works in, opened with the root's first
// session.
type ACPLocal struct {
	cfg    ACPConfig
	driver agent.Driver
	log    *slog.Logger

	mu      sync.Mutex
	cores   map[string]*shimCore // by root
	proxies *keyProxies
}

// OpenACP makes the agent's driver; the core opens with Open.
func OpenACP(cfg ACPConfig) (*ACPLocal, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	kind, ok := driver.Lookup(cfg.Agent)
	if !ok {
		return nil, &ConfigError{Field: "Agent", Reason: fmt.Sprintf("no agent %q (%s)", cfg.Agent, strings.Join(driver.Names(), ", "))}
	}
	if cfg.DataDir == "" {
		dir, err := DefaultACPDataDir()
		if err != nil {
			return nil, err
		}
		cfg.DataDir = dir
	}
	abs, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	cfg.DataDir = abs
	l := &ACPLocal{cfg: cfg, log: cfg.Logger, proxies: newKeyProxies(cfg.Logger), cores: map[string]*shimCore{}}
	if l.driver, _, err = newAgent(kind, cfg.CLI, Config{DataDir: cfg.DataDir}, l.proxies, cfg.Logger); err != nil {
		l.proxies.Close()
		return nil, err
	}
	return l, nil
}

// Capabilities are the agent's.
func (l *ACPLocal) Capabilities() agent.Capabilities { return l.driver.Capabilities() }

// Open opens the core of the workspaces under root, once. Its data lives
// in the data directory, one directory per root.
func (l *ACPLocal) Open(ctx context.Context, root string) (sessions.Core, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.cores[root]; ok {
		return c.sessions, nil
	}
	sum := sha256.Sum256([]byte(root))
	key := hex.EncodeToString(sum[:8])
	dataDir := filepath.Join(l.cfg.DataDir, "roots", key)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	homes := filepath.Join(dataDir, "homes")
	if realRoot := realPath(root); within(realPath(dataDir), realRoot) {
		// The agents' homes must not be under the workspaces they serve.
		homes = filepath.Join(os.TempDir(), "tether-acp-"+strconv.Itoa(os.Getuid()), key)
	}
	c := &shimCore{proxies: newKeyProxies(l.log)}
	ws, err := workspace.New(root, workspace.Options{HomesRoot: homes})
	if err == nil {
		c.log, err = eventlog.Open(filepath.Join(dataDir, "events.db"), eventlog.Options{Logger: l.log})
	}
	if err == nil {
		c.approvals, err = approvals.Open(filepath.Join(dataDir, "approvals.db"), nil)
	}
	if err == nil {
		c.sessions, err = sessions.New(sessions.Config{Drivers: map[string]agent.Driver{l.cfg.Agent: l.driver},
			Workspaces: ws, Log: c.log, Approvals: c.approvals, Logger: l.log, IndexDir: filepath.Join(dataDir, "sessions")})
	}
	if err != nil {
		c.close()
		return nil, withRemedy(err, dataDir)
	}
	l.cores[root] = c
	return c.sessions, nil
}

// Close ends the sessions (their conversations stay in the agents'
// stores, to be loaded again) and closes the cores.
func (l *ACPLocal) Close(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for root, c := range l.cores {
		if err := c.sessions.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		c.close()
		delete(l.cores, root)
	}
	l.proxies.Close()
	err := errors.Join(errs...)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("server: tether acp: sessions still ending at exit: %w", err)
	}
	return err
}
