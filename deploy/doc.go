// Package deploy holds what runs the Tether runner as a service: the
// systemd unit (tether.service) here and the container image's Dockerfile
// at the repository's root, and the tests that hold both to the
// repository (the agent CLI versions, the Go version) and check them with
// the real tools where the machine has them (systemd-analyze, a container
// engine). docs/operating.md is the guide that goes with them.
package deploy
