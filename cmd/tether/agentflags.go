package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tetherhq/tether/driver"
	_ "github.com/tetherhq/tether/driver/all" // every agent kind: run, serve, shim and daemon offer the registry's
	"github.com/tetherhq/tether/internal/gcfloor"
	"github.com/tetherhq/tether/server"
)

// defineAgentFlags defines how a runner runs its agents, the flags
// tether serve and tether daemon share: the CLIs (read with cliFlags),
// the sandbox (read with sandboxOn) and the agents' limits.
func defineAgentFlags(fl *pflag.FlagSet, cfg *server.Config, clis *[]string, sandbox *string) {
	fl.StringArrayVar(clis, "cli", nil,
		"an agent's CLI, `[NAME=]PATH` with NAME "+orList(server.CLIKinds())+"; repeatable; a bare PATH is claude's (default: each looked up on PATH)")
	fl.StringVar(sandbox, "sandbox", "on", "run agents under bubblewrap: `on` or off")
	fl.StringArrayVar(&cfg.SandboxReadOnly, "sandbox-ro", nil, "also show agents this `PATH`, read-only (repeatable): a shared toolchain, a package cache")
	fl.BoolVar(&cfg.AllowToolNetwork, "allow-tool-network", false, "let sessions ask for network in Bash commands")
	fl.BoolVar(&cfg.AllowUntestedAgents, "allow-untested-agents", false,
		"run agent CLIs of another version than the tested one ("+testedVersions()+")")
	fl.DurationVar(&cfg.TurnTimeout, "turn-timeout", 2*time.Hour,
		"how long a Codex or OpenCode turn may run before it ends as failed (0: no limit)")
	fl.StringSliceVar(&cfg.AgentEnv, "agent-env", nil,
		"`NAMES` of this process's environment variables to hand to agents too, comma-separated (names, not NAME=value)")
}

// defineProcessFlags defines the flags of a long-running process's logs
// and collector, which tether serve and tether daemon share.
func defineProcessFlags(fl *pflag.FlagSet, logFormat, logLevel *string, heapFloor *int64) {
	fl.StringVar(logFormat, "log-format", "text", "log lines on stderr as `text` or json")
	fl.StringVar(logLevel, "log-level", "info", "least severe log lines kept: debug, info, warn or error")
	fl.Int64Var(heapFloor, "gc-heap-floor", gcfloor.Default,
		"heap `BYTES` below which the Go collector does not run (fewer collections while events stream); an idle process gives back what its heap keeps beyond its live objects (0 or GOGC set: neither)")
}

// sandboxOn reads --sandbox, on or off.
func sandboxOn(value string) (bool, error) {
	switch value {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("--sandbox must be on or off, not %q", value)
}

// cliFlags reads the repeatable --cli [NAME=]PATH into the agents' CLIs by
// kind; a kind named twice is a usage error.
func cliFlags(values []string) (map[string]string, error) {
	clis := map[string]string{}
	for _, v := range values {
		kind, path := server.ParseCLIFlag(v)
		if _, dup := clis[kind]; dup {
			return nil, fmt.Errorf("--cli names %s twice", kind)
		}
		clis[kind] = path
	}
	return clis, nil
}

// orList is names as "a, b or c"; andList as "a, b and c".
func orList(names []string) string  { return joinList(names, "or") }
func andList(names []string) string { return joinList(names, "and") }

func joinList(names []string, conj string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conj + " " + names[len(names)-1]
}

// agentTitles are the registered kinds' names for people, in the default
// order: those with a CLI (builtin false) or those built in.
func agentTitles(builtin bool) []string {
	var titles []string
	for _, k := range driver.Kinds() {
		if k.Builtin() == builtin {
			titles = append(titles, k.Title)
		}
	}
	return titles
}

// testedVersions are the CLI versions the agents are tested with, for
// help: "OpenCode 1.18.33, Codex 0.169.0".
func testedVersions() string {
	var out []string
	for _, k := range driver.Kinds() {
		if fields := strings.Fields(k.TestedVersion); len(fields) > 0 {
			out = append(out, k.Title+" "+fields[len(fields)-1]) // "codex-cli 0.169.0" is 0.169.0
		}
	}
	return strings.Join(out, ", ")
}
