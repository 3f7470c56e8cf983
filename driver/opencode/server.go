package opencode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/internal/agentproc"
	"github.com/tetherhq/tether/sandbox"
	"github.com/tetherhq/tether/transport"
)

// listeningPrefix starts the line `opencode serve` prints once it listens.
const listeningPrefix = "opencode server listening on "

// serverUser is the basic-auth user OpenCode expects with
// OPENCODE_SERVER_PASSWORD (its default; the driver sets it explicitly).
const serverUser = "opencode"

// Shutdown of the server: it does not exit when its stdin closes, and
// takes over a second after SIGTERM.
const (
	exitGrace = 50 * time.Millisecond
	termGrace = 5 * time.Second
)

// healthPoll paces the health checks while the server boots; healthTimeout
// bounds one (the first requests to a booting server can hang).
const (
	healthPoll    = 100 * time.Millisecond
	healthTimeout = 2 * time.Second
)

// askPermissions makes OpenCode ask before shell commands and edits, over
// whatever its configuration allows: OPENCODE_PERMISSION is merged last
// into its config.
var askPermissions = map[string]any{"bash": "ask", "edit": "ask"}

// noWebTools turns OpenCode's own web tools off where its commands have no
// network: they would fetch with the OpenCode process's network, loopback
// included.
var noWebTools = map[string]any{"webfetch": "deny", "websearch": "deny"}

// offlineEnv keeps OpenCode from reaching out at start: no external plugins
// (OPENCODE_PURE), no models catalogue, update check, default plugins,
// language server downloads or sharing. Each is a default: a value in
// Config.Env (OPENCODE_PURE=0, say) wins.
func offlineEnv() map[string]string {
	return map[string]string{
		"OPENCODE_PURE":                    "1",
		"OPENCODE_DISABLE_MODELS_FETCH":    "1",
		"OPENCODE_DISABLE_AUTOUPDATE":      "1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD":    "1",
		"OPENCODE_DISABLE_SHARE":           "1",
	}
}

// homeNpmrc is npm's configuration for OpenCode's global config directory
// in a session's home. OpenCode installs @opencode-ai/plugin into each
// config directory from the npm registry in the background of every start,
// OPENCODE_PURE or not; offline there, that install gives up at once
// (OpenCode goes on without it), while the provider packages OpenCode
// fetches into its cache still use the registry the operator's npm_config_*
// name. npm_config_offline=false in Config.Env turns the install back on.
const (
	homeNpmrc        = ".config/opencode/.npmrc"
	homeNpmrcContent = "offline=true\n"
)

// server is one running `opencode serve`. Its stdout shares stderr's
// pipe, which the driver's Launcher reads only when there is output: no
// goroutine of the session waits on it.
type server struct {
	conn     transport.Conn
	proc     transport.Exiter
	url      string // http://127.0.0.1:PORT
	password string
	// exited is closed when the process has ended; exitError says how.
	exited <-chan struct{}
	// listen gets the address the server says it listens on.
	listen chan string
}

// exitError is how the process ended (nil while it runs, or for a clean
// exit).
func (s *server) exitError() error { return s.proc.Err() }

// output takes a line of the server's output: where it listens, or a log.
func (s *server) output(log *slog.Logger, line string) {
	if url, ok := strings.CutPrefix(strings.TrimSpace(line), listeningPrefix); ok {
		select {
		case s.listen <- url:
		default: // said before
		}
		return
	}
	log.Debug("opencode: output", "line", line)
}

// launch starts `opencode serve` for one session and waits until it
// answers its health check. On failure nothing is left running. Sandboxed,
// the commands OpenCode runs go through the sandbox's tool shell, without
// network, unless toolNetwork (the session asked, the runner allows).
func (d *Driver) launch(ctx context.Context, req agent.StartRequest, toolNetwork bool) (*server, error) {
	if req.Home != "" {
		if err := agentproc.WriteHomeFiles(req.Home, d.homeFiles()); err != nil {
			if errors.Is(err, agentproc.ErrHomeFile) {
				return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
			}
			return nil, fmt.Errorf("opencode: %w", err)
		}
	}
	password, err := randomPassword()
	if err != nil {
		return nil, err
	}
	noToolNetwork := d.cfg.Sandbox != nil && !toolNetwork
	env, err := d.env(req.Home, password, noToolNetwork, req.MCPServers)
	if err != nil {
		return nil, err
	}
	srv := &server{password: password, listen: make(chan string, 1)}
	cmd := &transport.Command{Path: d.cli, Args: []string{"serve", "--hostname", "127.0.0.1", "--port", "0"}, Env: env,
		Dir: req.Workspace, ExitGrace: exitGrace, TermGrace: termGrace, Launcher: &d.launcher,
		Logger: d.log, StdoutToStderr: true, Stderr: func(line string) { srv.output(d.log, line) }}
	if d.cfg.Sandbox != nil {
		policy := *d.cfg.Sandbox
		if noToolNetwork {
			// The tool shell builds a nested sandbox for each command.
			policy.ToolShell, policy.NestedSandboxes, policy.ToolNetwork = true, true, false
		}
		if err := agentproc.Sandbox(cmd, policy, req.Workspace, req.Home); err != nil {
			return nil, fmt.Errorf("opencode: sandbox: %w", err)
		}
	}
	conn, err := cmd.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("opencode: start: %w", err)
	}
	proc, ok := conn.(transport.Exiter)
	if !ok { // cannot happen: a Command's Conn is one
		_ = conn.Close()
		return nil, fmt.Errorf("opencode: start: %T does not report its process's end", conn)
	}
	srv.conn, srv.proc, srv.exited = conn, proc, proc.Done()
	url, err := srv.listening(ctx)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	srv.url = url
	if err := srv.waitHealthy(ctx, d.calls); err != nil {
		srv.close()
		return nil, err
	}
	return srv, nil
}

// homeFiles are the files each session's home gets: Config.HomeFiles, and
// the npm configuration that keeps OpenCode's start offline unless they
// hold one of their own.
func (d *Driver) homeFiles() map[string][]byte {
	if _, own := d.cfg.HomeFiles[homeNpmrc]; own {
		return d.cfg.HomeFiles
	}
	files := maps.Clone(d.cfg.HomeFiles)
	if files == nil {
		files = map[string][]byte{}
	}
	files[homeNpmrc] = []byte(homeNpmrcContent)
	return files
}

// listening waits until the server says where it listens (`--port 0`
// takes 4096 when free, else a random port).
func (s *server) listening(ctx context.Context) (string, error) {
	select {
	case url := <-s.listen:
		if !strings.HasPrefix(url, "http://127.0.0.1:") {
			return "", fmt.Errorf("%w: it listens on %q, not on loopback", ErrServerNotReady, url)
		}
		return strings.TrimSuffix(url, "/"), nil
	case <-s.exited:
		return "", fmt.Errorf("%w: before it listened: %w", ErrServerExited, s.endError())
	case <-ctx.Done():
		return "", fmt.Errorf("%w: it did not say where it listens: %w", ErrServerNotReady, ctx.Err())
	}
}

// endError is how the process ended, io.EOF for a clean exit.
func (s *server) endError() error {
	if err := s.exitError(); err != nil {
		return err
	}
	return io.EOF
}

// waitHealthy polls GET /global/health through tr until it says healthy.
func (s *server) waitHealthy(ctx context.Context, tr *http.Transport) error {
	c := newClient(s.url, s.password, tr)
	defer c.close()
	var last error
	for {
		hctx, cancel := context.WithTimeout(ctx, healthTimeout)
		h, err := c.health(hctx)
		cancel()
		if err == nil && h.Healthy {
			return nil
		}
		last = err
		select {
		case <-s.exited:
			return fmt.Errorf("%w: before it was healthy: %w", ErrServerExited, s.endError())
		case <-ctx.Done():
			return fmt.Errorf("%w: no healthy answer (last: %v): %w", ErrServerNotReady, last, ctx.Err())
		case <-time.After(healthPoll):
		}
	}
}

// close ends the server and waits for its process.
func (s *server) close() {
	_ = s.conn.Close()
	<-s.exited
}

// env is the server's environment: the configured one, with the server's
// password, the permission rules that make it ask, the switches that keep
// it offline (offlineEnv) where the configured one does not set them, when
// the session has a home, HOME and OpenCode's XDG directories inside it,
// and with noToolNetwork the sandbox's tool shell as its shell and no web
// tools.
//
// OpenCode runs every shell command (its bash tool's, a command template's
// or the user's) with its config's shell, else $SHELL, and falls back to
// bash only when that file does not exist, which the sandbox rules out.
// OPENCODE_CONFIG_CONTENT is merged over the global and the project's
// config files, which the agent can write.
func (d *Driver) env(home, password string, noToolNetwork bool, servers []agent.MCPServer) ([]string, error) {
	base := d.cfg.Env
	if base == nil {
		base = os.Environ()
	}
	set := map[string]string{
		"OPENCODE_SERVER_PASSWORD": password,
		"OPENCODE_SERVER_USERNAME": serverUser,
	}
	for k, v := range offlineEnv() {
		if _, given := agentproc.LookupEnv(base, k); !given {
			set[k] = v
		}
	}
	rules := maps.Clone(askPermissions)
	if noToolNetwork {
		maps.Copy(rules, noWebTools)
	}
	perm, err := mergeJSON("OPENCODE_PERMISSION", envOr(base, "OPENCODE_PERMISSION"), rules)
	if err != nil {
		return nil, err
	}
	set["OPENCODE_PERMISSION"] = perm
	content := map[string]any{}
	if noToolNetwork {
		content["shell"] = sandbox.ToolShellPath
		set["SHELL"] = sandbox.ToolShellPath
	}
	if len(servers) > 0 {
		// The session's servers go with those the configured content
		// names; the environment, unlike argv, only the user can read.
		if content["mcp"], err = mcpConfig(envOr(base, "OPENCODE_CONFIG_CONTENT"), servers); err != nil {
			return nil, err
		}
	}
	if len(content) > 0 {
		if set["OPENCODE_CONFIG_CONTENT"], err = mergeJSON("OPENCODE_CONFIG_CONTENT", envOr(base, "OPENCODE_CONFIG_CONTENT"), content); err != nil {
			return nil, err
		}
	}
	if home != "" {
		set["HOME"] = home
		set["XDG_CONFIG_HOME"] = filepath.Join(home, ".config")
		set["XDG_DATA_HOME"] = filepath.Join(home, ".local", "share")
		set["XDG_CACHE_HOME"] = filepath.Join(home, ".cache")
		set["XDG_STATE_HOME"] = filepath.Join(home, ".local", "state")
	}
	env := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := set[k]; !over {
			env = append(env, kv)
		}
	}
	for _, k := range sortedKeys(set) {
		env = append(env, k+"="+set[k])
	}
	return env, nil
}

// mergeJSON is current, the JSON object in the variable name, with the
// keys of over set over it.
func mergeJSON(name, current string, over map[string]any) (string, error) {
	fields := map[string]any{}
	if current != "" {
		if err := json.Unmarshal([]byte(current), &fields); err != nil {
			return "", fmt.Errorf("%w: %s in Env is not a JSON object: %w", ErrInvalidRequest, name, err)
		}
	}
	maps.Copy(fields, over)
	b, err := json.Marshal(fields)
	return string(b), err
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range maps.Keys(m) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func randomPassword() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("opencode: password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// envOr is key's value in env, or "".
func envOr(env []string, key string) string {
	v, _ := agentproc.LookupEnv(env, key)
	return v
}
