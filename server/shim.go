package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/internal/usage"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

// ShimConfig configures `tether shim`: the adapter-shim API for one
// agent, as a backend launches it (one process per agent).
type ShimConfig struct {
	// Agent is the agent kind, one of the registry's (driver.Names).
	Agent string
	// Host and Port are where to listen; port 0 picks a free one.
	Host string
	Port int
	// Workspace is the directory the agent works in (created if
	// missing). Its parent holds the runner's private .tether directory.
	Workspace string
	// DataDir keeps the event log and approvals; empty uses a temporary
	// directory removed at exit.
	DataDir string
	// CLI is the agent's CLI; empty looks its name up on PATH.
	CLI string
	// Sandbox runs the agent in bubblewrap as tether serve's --sandbox
	// does: it sees its workspace, its private home and the system, not
	// the workspace's siblings or the shim's data, and model keys stay
	// behind a loopback proxy. Off by default, as the reference shims run
	// (a backend usually gives each shim a container of its own).
	Sandbox bool
	// Bootstrap is AGENT_BOOTSTRAP's JSON (empty for none).
	Bootstrap string
	// Token is TETHER_SHIM_TOKEN: the secret every request must carry
	// (the bootstrap's shimToken is the other place to give it). Without
	// one the shim listens on loopback only.
	Token string
	// Announce gets the line {"port":N} once the shim listens.
	Announce io.Writer
	Logger   *slog.Logger
}

// RunShim serves the adapter-shim API until ctx ends, then stops the
// agent and returns.
func RunShim(ctx context.Context, cfg ShimConfig) (err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var boot shim.Bootstrap
	if cfg.Bootstrap != "" {
		if err := json.Unmarshal([]byte(cfg.Bootstrap), &boot); err != nil {
			return &ConfigError{Field: "Bootstrap", Reason: "AGENT_BOOTSTRAP is not JSON: " + err.Error()}
		}
	}
	token, tokenSource, err := shim.ResolveToken(boot, cfg.Token)
	if err != nil {
		return &ConfigError{Field: "Token", Reason: err.Error()}
	}
	host := cfg.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if err := shim.CheckListen(host, token); err != nil {
		return &ConfigError{Field: "Host", Reason: err.Error()}
	}
	if cfg.Workspace == "" {
		return &ConfigError{Field: "Workspace", Reason: "is required"}
	}
	kind, ok := driver.Lookup(cfg.Agent)
	if !ok {
		return &ConfigError{Field: "Agent", Reason: fmt.Sprintf("no agent %q (%s)", cfg.Agent, strings.Join(driver.Names(), ", "))}
	}
	wsDir, err := filepath.Abs(cfg.Workspace)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := os.MkdirAll(wsDir, 0o755); err != nil {
		return fmt.Errorf("server: workspace: %w", err)
	}
	if wsDir, err = filepath.EvalSymlinks(wsDir); err != nil {
		return fmt.Errorf("server: workspace: %w", err)
	}
	dataDir := cfg.DataDir
	if dataDir == "" {
		if dataDir, err = tempDataDir(filepath.Dir(wsDir)); err != nil {
			return err
		}
		defer os.RemoveAll(dataDir)
	}
	if dataDir, err = filepath.Abs(dataDir); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if dataDir, err = filepath.EvalSymlinks(dataDir); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if parent := filepath.Dir(wsDir); within(dataDir, parent) || within(parent, dataDir) {
		return &ConfigError{Field: "DataDir", Reason: fmt.Sprintf("%s must be outside the workspace's parent directory %s, and not contain it (it holds the agent's private home)", dataDir, parent)}
	}
	core, err := openShimCore(cfg, kind, wsDir, dataDir, log)
	if err != nil {
		return err
	}
	defer core.close()
	shimCfg := shim.Config{Sessions: core.sessions, Agent: cfg.Agent, WorkspaceID: filepath.Base(wsDir), Workspace: wsDir,
		ResumeOptions: kind.ResumeOptions, CheckpointSDK: kind.CheckpointSDK,
		Bootstrap: boot, Logger: log, Usage: newShimUsage(wsDir).report, Token: token, TokenSource: tokenSource, ListenHost: host,
		StateFile: filepath.Join(dataDir, "shim-runs.json")}
	sh, err := shim.New(shimCfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return fmt.Errorf("server: listen: %w", err)
	}
	srv := &http.Server{Handler: sh.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	port := ln.Addr().(*net.TCPAddr).Port
	if cfg.Announce != nil {
		fmt.Fprintf(cfg.Announce, "{\"port\":%d}\n", port)
	}
	log.Info("shim listening", "addr", ln.Addr().String(), "agent", cfg.Agent, "workspace", wsDir)
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	closeErr := sh.Close(stopCtx)
	_ = srv.Shutdown(stopCtx)
	if err == nil {
		err = <-served
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, closeErr, core.sessions.Shutdown(stopCtx))
}

// tempDataDir is a temporary data directory outside parent (the
// workspace's parent, which must not hold the agent's private home): in
// the system's temporary directory, else the user's cache directory.
func tempDataDir(parent string) (string, error) {
	var bases []string
	if tmp, err := filepath.EvalSymlinks(os.TempDir()); err == nil {
		bases = append(bases, tmp)
	}
	if cache, err := os.UserCacheDir(); err == nil {
		bases = append(bases, filepath.Join(cache, "tether"))
	}
	for _, base := range bases {
		if within(base, parent) || within(parent, base) {
			continue
		}
		if err := os.MkdirAll(base, 0o700); err != nil {
			continue
		}
		dir, err := os.MkdirTemp(base, "tether-shim-")
		if err == nil {
			return dir, nil
		}
	}
	return "", &ConfigError{Field: "DataDir", Reason: "no temporary directory outside the workspace's parent " + parent + ": give --data-dir"}
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// shimCore is the runner core of one shim: one agent's driver, the
// workspace, the event log and the approvals.
type shimCore struct {
	sessions  *sessions.Manager
	log       *eventlog.Bolt
	approvals *approvals.Store
	proxies   *keyProxies
}

func (c *shimCore) close() {
	if c.approvals != nil {
		c.approvals.Close()
	}
	if c.log != nil {
		c.log.Close()
	}
	c.proxies.Close()
}

func openShimCore(cfg ShimConfig, kind driver.Kind, wsDir, dataDir string, log *slog.Logger) (_ *shimCore, err error) {
	c := &shimCore{proxies: newKeyProxies(log)}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	// The agent under the runner's policy: its slice of the environment,
	// its provider configuration, the sandbox hiding the workspace's
	// parent (the workspace itself is mounted back) and the shim's data.
	policy := Config{Sandbox: cfg.Sandbox, WorkspaceRoot: filepath.Dir(wsDir), DataDir: dataDir}
	d, _, err := newAgent(kind, cfg.CLI, policy, c.proxies, log)
	if err != nil {
		return nil, err
	}
	ws, err := workspace.New(filepath.Dir(wsDir), workspace.Options{HomesRoot: filepath.Join(dataDir, "homes")})
	if err != nil {
		return nil, err
	}
	if c.log, err = eventlog.Open(filepath.Join(dataDir, "events.db"), eventlog.Options{Logger: log}); err != nil {
		return nil, withRemedy(err, dataDir)
	}
	if c.approvals, err = approvals.Open(filepath.Join(dataDir, "approvals.db"), nil); err != nil {
		return nil, withRemedy(err, dataDir)
	}
	// The sessions' index, with the shim's runs' records: a shim started
	// again on its data directory serves the earlier runs' streams.
	if c.sessions, err = sessions.New(sessions.Config{Drivers: map[string]agent.Driver{cfg.Agent: d},
		Workspaces: ws, Log: c.log, Approvals: c.approvals, Logger: log, IndexDir: filepath.Join(dataDir, "sessions")}); err != nil {
		return nil, err
	}
	return c, nil
}

// shimDiskEvery is how often /health walks the workspace again for its
// size; between walks it reports the last one. A walk that takes longer
// than shimDiskWalk is given up, and the last size stands.
const (
	shimDiskEvery = 10 * time.Second
	shimDiskWalk  = 2 * time.Second
)

// shimUsage measures for the shim's /health: the CPU and memory of this
// process's tree (the shim and the agent it runs, with their commands),
// and the disk its workspace takes.
type shimUsage struct {
	tree      *usage.Tree
	workspace string

	mu       sync.Mutex
	disk     int64
	diskWhen time.Time
}

func newShimUsage(workspace string) *shimUsage {
	return &shimUsage{tree: usage.NewTree(os.Getpid(), nil), workspace: workspace}
}

func (u *shimUsage) report(ctx context.Context) (shim.ResourceUsage, error) {
	s, err := u.tree.Sample()
	if err != nil {
		return shim.ResourceUsage{}, err
	}
	disk, err := u.diskBytes(ctx)
	if err != nil {
		return shim.ResourceUsage{}, err
	}
	return shim.ResourceUsage{CPUPercent: s.CPUPercent, MemoryMb: float64(s.RSSBytes) / (1 << 20),
		DiskMb: float64(disk) / (1 << 20)}, nil
}

// diskBytes walks the workspace at most every shimDiskEvery.
func (u *shimUsage) diskBytes(ctx context.Context) (int64, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.diskWhen.IsZero() && time.Since(u.diskWhen) < shimDiskEvery {
		return u.disk, nil
	}
	ctx, cancel := context.WithTimeout(ctx, shimDiskWalk)
	defer cancel()
	n, err := usage.DirBytes(ctx, u.workspace)
	if err != nil && u.diskWhen.IsZero() {
		return 0, err
	}
	if err == nil {
		u.disk = n
	}
	u.diskWhen = time.Now() // a failed walk is not tried again at once either
	return u.disk, nil
}
