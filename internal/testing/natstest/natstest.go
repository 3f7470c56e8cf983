// Package natstest writes the NATS configurations the fleet's tests and
// benchmarks run on (nodes of a cluster on loopback, with passwords for
// clients and routes, as docs/fleet.md shows them), and builds and waits
// for the nats-server they run as external nodes.
package natstest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The credentials every node takes: clients (runners), and the routes
// between nodes.
const (
	User          = "tether"
	Password      = "fleet-secret"
	routeUser     = "route"
	routePassword = "route-secret"
)

// NodeConfig writes a node's configuration into dir and returns its path:
// clients on 127.0.0.1:client, JetStream stored under dir, and, when
// routes are given, a cluster listening on route with routes to the
// others' route ports.
func NodeConfig(dir, name string, client, route int, routes []int) (string, error) {
	var urls []string
	for _, p := range routes {
		urls = append(urls, fmt.Sprintf("nats://%s:%s@127.0.0.1:%d", routeUser, routePassword, p))
	}
	conf := fmt.Sprintf("server_name: %s\nlisten: 127.0.0.1:%d\nauthorization { user: %s, password: %s }\njetstream { store_dir: %q }\n",
		name, client, User, Password, filepath.Join(dir, "jetstream"))
	if len(routes) > 0 {
		conf += fmt.Sprintf("cluster {\n  name: tether\n  listen: 127.0.0.1:%d\n  authorization { user: %s, password: %s }\n  routes: [%s]\n}\n",
			route, routeUser, routePassword, strings.Join(urls, ", "))
	}
	path := filepath.Join(dir, "nats.conf")
	return path, os.WriteFile(path, []byte(conf), 0o600)
}

// Cluster writes the configurations of n nodes of one cluster into
// directories under dir and returns their paths and client ports.
func Cluster(dir string, n int) (confs []string, clients []int, err error) {
	ports, err := FreePorts(2 * n)
	if err != nil {
		return nil, nil, err
	}
	for i := range n {
		nodeDir := filepath.Join(dir, fmt.Sprintf("node%d", i))
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			return nil, nil, err
		}
		var routes []int
		for j := range n {
			if j != i {
				routes = append(routes, ports[n+j])
			}
		}
		conf, err := NodeConfig(nodeDir, fmt.Sprintf("n%d", i), ports[i], ports[n+i], routes)
		if err != nil {
			return nil, nil, err
		}
		confs, clients = append(confs, conf), append(clients, ports[i])
	}
	return confs, clients, nil
}

// URL is a client's URL for the node on port, with the credentials.
func URL(port int) string { return fmt.Sprintf("nats://%s:%s@127.0.0.1:%d", User, Password, port) }

// FreePorts reserves n loopback ports and frees them for a child to take.
//
// They are chosen below the kernel's ephemeral range, so that no socket
// bound to port 0 and no outgoing connection — of this process or any
// other, such as test packages running beside it — takes one while it is
// free: a runner killed and started again must get its own ports back.
func FreePorts(n int) ([]int, error) {
	lo, hi := fixedPortRange()
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		port := 0
		if hi > lo && tries < 1000*n {
			port = lo + rand.IntN(hi-lo)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			if port != 0 {
				continue // taken: try another
			}
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// fixedPortRange is the ports FreePorts picks from: from 10000 up to the
// ephemeral range's start (an empty range when it starts lower).
func fixedPortRange() (lo, hi int) {
	lo, hi = 10000, 32768 // Linux's default ephemeral start
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				hi = v
			}
		}
	}
	return lo, hi
}

// BuildServer builds nats-server from the module tether pins into path:
// the external NATS system of the tests and benchmarks.
func BuildServer(path string) error {
	out, err := exec.Command("go", "build", "-o", path, "github.com/nats-io/nats-server/v2").CombinedOutput()
	if err != nil {
		return fmt.Errorf("building nats-server: %w\n%s", err, out)
	}
	return nil
}

// WaitListening waits until something takes connections on loopback
// port, for at most limit.
func WaitListening(port int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %d within %v: %w", port, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
