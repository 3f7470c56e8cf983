package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	// ErrUnreachable: no NATS server answered at the URLs given.
	ErrUnreachable = errors.New("fleet: no NATS server answers")
	// ErrRefused: NATS refused the runner's credentials.
	ErrRefused = errors.New("fleet: NATS refused the credentials")
	// ErrNoJetStream: NATS answered, but JetStream did not (not enabled,
	// or the cluster has no quorum yet).
	ErrNoJetStream = errors.New("fleet: JetStream is not available")
)

// DefaultConnectTimeout bounds the start: the first connection, the wait
// for JetStream to answer (a cluster needs a quorum before it does) and
// the stream and buckets (a cluster that has just formed can take tens
// of seconds to know its peers well enough to place their replicas).
const DefaultConnectTimeout = 2 * time.Minute

// dial connects to NATS: to the embedded node in process when there is
// one, else to the URLs. Reconnects are forever: a runner whose link
// drops keeps its agents and catches up when the link returns.
func dial(cfg Config, node *Node) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name("tether runner " + cfg.Name), nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond), nats.Timeout(5 * time.Second)}
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	url := strings.Join(cfg.URLs, ",")
	if node != nil {
		opts = append(opts, nats.InProcessServer(node.Server()))
		if name, pass := node.user(); cfg.CredsFile == "" && name != "" {
			opts = append(opts, nats.UserInfo(name, pass))
		}
		url = node.ClientURL()
	}
	nc, err := nats.Connect(url, opts...)
	if err == nil {
		return nc, nil
	}
	where := url
	if node != nil {
		where = "the embedded node"
	}
	switch {
	case errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization"):
		return nil, fmt.Errorf("%w at %s: %w", ErrRefused, where, err)
	case errors.Is(err, nats.ErrNoServers):
		return nil, fmt.Errorf("%w at %s: %w", ErrUnreachable, where, err)
	}
	return nil, fmt.Errorf("fleet: connecting to NATS at %s: %w", where, err)
}

// awaitJetStream waits until JetStream answers on nc, until ctx ends.
func awaitJetStream(ctx context.Context, js jetstream.JetStream) error {
	var last error
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.AccountInfo(actx)
		cancel()
		if err == nil {
			return nil
		}
		last = err
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return fmt.Errorf("%w: %w", ErrNoJetStream, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (still waiting when the time ran out: %w)", ErrNoJetStream, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
