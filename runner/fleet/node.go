package fleet

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Node is a NATS server embedded in the runner's process, configured in
// nats-server's own configuration format.
type Node struct {
	srv  *server.Server
	opts *server.Options
}

// ErrNodeConfig: the embedded node's configuration cannot be used.
var ErrNodeConfig = errors.New("fleet: embedded NATS configuration")

// nodeReadyTimeout bounds the wait for the embedded node to listen.
const nodeReadyTimeout = 10 * time.Second

// StartNode reads a nats-server configuration file and starts that node
// in this process. It refuses a configuration without JetStream, or one
// that lets clients or cluster routes in without authentication: a
// runner's node carries every session's events.
func StartNode(path string, log *slog.Logger) (*Node, error) {
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNodeConfig, path, err)
	}
	if err := checkNodeOptions(opts); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNodeConfig, path, err)
	}
	opts.NoSigs = true // the runner owns the process's signals
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNodeConfig, path, err)
	}
	if log != nil {
		srv.SetLoggerV2(natsLogger{log: log.With("part", "nats"), redial: &redialNotes{last: map[string]time.Time{}}}, opts.Debug, opts.Trace, false)
	}
	srv.Start()
	if !srv.ReadyForConnections(nodeReadyTimeout) {
		srv.Shutdown()
		return nil, fmt.Errorf("fleet: the embedded NATS node did not start listening within %s", nodeReadyTimeout)
	}
	if !srv.JetStreamEnabled() {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("%w: %s: JetStream did not start (the node's log says why)", ErrNodeConfig, path)
	}
	return &Node{srv: srv, opts: opts}, nil
}

func checkNodeOptions(o *server.Options) error {
	if !o.JetStream {
		return errors.New("it does not enable JetStream (add a jetstream block with a store_dir)")
	}
	if !clientAuth(o) {
		return errors.New("it lets clients in without authentication (add an authorization block, users or accounts)")
	}
	if o.Cluster.Port != 0 && o.Cluster.Username == "" && o.Cluster.TLSConfig == nil {
		return errors.New("its cluster accepts routes without authentication (add authorization to the cluster block, or TLS with verify)")
	}
	return nil
}

func clientAuth(o *server.Options) bool {
	return o.Username != "" || o.Authorization != "" || len(o.Users) > 0 || len(o.Nkeys) > 0 ||
		len(o.TrustedOperators) > 0 || (o.TLSConfig != nil && o.TLSVerify)
}

// Server is the embedded server, for an in-process client connection.
func (n *Node) Server() *server.Server { return n.srv }

// ClientURL is where clients reach the node.
func (n *Node) ClientURL() string { return n.srv.ClientURL() }

// Peers is how many nodes the configuration names, itself included: the
// replicas a stream can have.
func (n *Node) Peers() int { return 1 + len(n.opts.Routes) }

// user is the single user or first user the configuration names, for the
// runner's own connection when no credentials file is given.
func (n *Node) user() (name, password string) {
	if n.opts.Username != "" {
		return n.opts.Username, n.opts.Password
	}
	if len(n.opts.Users) > 0 {
		return n.opts.Users[0].Username, n.opts.Users[0].Password
	}
	return "", ""
}

// Close stops the node and waits for it.
func (n *Node) Close() {
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
}

// natsLogger hands the server's logs to slog.
type natsLogger struct {
	log    *slog.Logger
	redial *redialNotes
}

// Noticef: the server's notices (its banner, each route) are detail for
// a runner's log.
func (l natsLogger) Noticef(f string, v ...any) { l.log.Debug(fmt.Sprintf(f, v...)) }
func (l natsLogger) Warnf(f string, v ...any)   { l.log.Warn(fmt.Sprintf(f, v...)) }
func (l natsLogger) Fatalf(f string, v ...any)  { l.log.Error(fmt.Sprintf(f, v...)) }
func (l natsLogger) Errorf(f string, v ...any) {
	msg := fmt.Sprintf(f, v...)
	if l.redial.quiet(msg, time.Now()) {
		l.log.Debug(msg)
		return
	}
	l.log.Error(msg)
}

func (l natsLogger) Debugf(f string, v ...any) { l.log.Debug(fmt.Sprintf(f, v...)) }
func (l natsLogger) Tracef(f string, v ...any) { l.log.Debug(fmt.Sprintf(f, v...)) }
