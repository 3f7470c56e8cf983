package driver

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"

	"github.com/tetherhq/tether/agent"
)

// Kind is one agent kind as every part of tether knows it.
type Kind struct {
	// Name is the kind's name on tether's own flags and wires (--agent,
	// --cli NAME=PATH, the sessions API): "claude".
	Name string
	// Title is the agent's name for people: "Claude Code".
	Title string
	// About says what the kind runs, for help texts, naming the agent:
	// "the Codex CLI over codex app-server".
	About string
	// Order is the kind's place in the default order, lowest first: a
	// session that names no agent gets the first kind offered (Mast's
	// create_session).
	Order int
	// MastType is the kind's agentType on Mast's wire when it is not Name
	// ("claude-code"); Mast's commands take either.
	MastType string
	// CheckpointSDK is the tag of the adapter-shim checkpoint union its
	// resume state travels as: "claude" (the session id), "mock" (the
	// script position) or "openai" (runStateJson).
	CheckpointSDK string
	// ResumeOptions, when set, are the start options that continue a
	// conversation of `turns` turns from a checkpoint taken by another
	// process (the mock's script position); the agents that resume from
	// their own session store need none.
	ResumeOptions func(turns int) json.RawMessage

	// CLI is the executable's name on PATH; empty for a kind built into
	// tether, which needs no CLI and is always offered.
	CLI string
	// FindCLI finds the CLI: path when given (a path or a name), else the
	// kind's own search; env is the environment the CLI will run with.
	// Nil looks CLI (or path) up on env's PATH. Its error matches
	// ErrCLINotFound when the CLI is not there.
	FindCLI func(path string, env []string) (string, error)
	// TestedVersion is the CLI release the driver is tested with, which it
	// insists on unless Config.AllowUntestedVersion; empty when it checks
	// none.
	TestedVersion string

	// EnvPrefixes name the variables of the runner's environment the
	// agent sees (its model API's settings, its own switches), besides
	// the locale, PATH and the names the operator adds (Environ).
	EnvPrefixes []string
	// Provider hands the agent the runner's own provider configuration:
	// its environment, and the files each session's home gets. Nil hands
	// it the environment as it is.
	Provider func(ProviderRequest) (Provision, error)

	// New makes the kind's driver from the common configuration; the
	// fields a kind has no use for are ignored.
	New func(Config) (agent.Driver, error)
}

// Builtin reports whether the kind runs inside tether, with no CLI.
func (k Kind) Builtin() bool { return k.CLI == "" }

// MastName is the kind's agentType on Mast's wire.
func (k Kind) MastName() string { return cmp.Or(k.MastType, k.Name) }

// ErrRegistration matches a *RegistrationError.
var ErrRegistration = errors.New("driver: bad registration")

// RegistrationError is a Kind the registry refuses: a programming error in
// a driver package, reported when the program starts.
type RegistrationError struct {
	Kind   string
	Reason string
}

func (e *RegistrationError) Error() string {
	return fmt.Sprintf("driver: cannot register agent kind %q: %s", e.Kind, e.Reason)
}

// Is makes errors.Is(err, ErrRegistration) true.
func (e *RegistrationError) Is(target error) bool { return target == ErrRegistration }

// registry holds the kinds by name; safe for concurrent use.
type registry struct {
	mu    sync.RWMutex
	kinds map[string]Kind
}

// kinds is the program's registry, filled by the driver packages' init
// functions (Register) before main runs.
var kinds registry

// Register adds k to the program's registry. A driver package calls it
// once, from its init; a kind that is incomplete or whose name is taken
// panics there, so the mistake shows the first time the program runs.
func Register(k Kind) {
	if err := kinds.add(k); err != nil {
		panic(err)
	}
}

// Kinds are every registered kind, in the default order.
func Kinds() []Kind { return kinds.all() }

// Names are the registered kinds' names, in the default order.
func Names() []string {
	var names []string
	for _, k := range Kinds() {
		names = append(names, k.Name)
	}
	return names
}

// Lookup is the kind named name.
func Lookup(name string) (Kind, bool) { return kinds.lookup(name) }

// LookupMast is the kind a Mast agentType names: its MastType or its Name.
func LookupMast(typ string) (Kind, bool) { return kinds.lookupMast(typ) }

// kindName is what a kind's name may be: it is a flag's value and the
// NAME of --cli NAME=PATH.
var kindName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

func (r *registry) add(k Kind) error {
	refuse := func(reason string) error { return &RegistrationError{Kind: k.Name, Reason: reason} }
	switch {
	case !kindName.MatchString(k.Name):
		return refuse("a name is lowercase letters, digits and dashes, beginning with a letter")
	case k.Title == "" || k.About == "":
		return refuse("no Title or About for help texts")
	case k.New == nil:
		return refuse("no constructor (New)")
	case k.Builtin() && (k.FindCLI != nil || k.TestedVersion != ""):
		return refuse("a kind without a CLI has none to find or check")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, other := range r.kinds {
		taken := []string{other.Name, other.MastName()}
		if slices.Contains(taken, k.Name) || slices.Contains(taken, k.MastName()) {
			return refuse(fmt.Sprintf("its name or Mast name is %q's", other.Name))
		}
	}
	if r.kinds == nil {
		r.kinds = map[string]Kind{}
	}
	r.kinds[k.Name] = k
	return nil
}

func (r *registry) all() []Kind {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Kind, 0, len(r.kinds))
	for _, k := range r.kinds {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b Kind) int { return cmp.Or(cmp.Compare(a.Order, b.Order), cmp.Compare(a.Name, b.Name)) })
	return out
}

func (r *registry) lookup(name string) (Kind, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.kinds[name]
	return k, ok
}

func (r *registry) lookupMast(typ string) (Kind, bool) {
	if k, ok := r.lookup(typ); ok {
		return k, true
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, k := range r.kinds {
		if k.MastType != "" && k.MastType == typ {
			return k, true
		}
	}
	return Kind{}, false
}
