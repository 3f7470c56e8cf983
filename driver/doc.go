// Package driver is the registry of agent kinds. Each driver package under
// driver/ describes its agent as a Kind — its name and its names on other
// wires, its place in the default order, how to find and check its CLI,
// which of the runner's environment and provider configuration it gets,
// and how to make its agent.Driver from the common Config — and registers
// it from its init with one line:
//
//	func init() { driver.Register(registration()) }
//
// Package driver/all imports every driver; a program that imports it (tether
// does) offers every kind, in `tether run`, `serve`, `shim` and `daemon`
// alike. A new agent is a package under driver/ plus one import line in
// driver/all.
//
// The registry knows nothing of the runner: a kind's provider wiring is
// handed the runner's key proxies as the KeyProxies interface, so nothing
// under driver/ imports runner or server.
package driver
