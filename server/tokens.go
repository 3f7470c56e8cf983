package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/tetherhq/tether/runner/auth"
)

// errNoTokenLeft refuses a reload that would leave the runner no token.
var errNoTokenLeft = errors.New("server: the reloaded tokens are none")

// watchTokenReloads reloads the hosts' tokens into tokens each time
// cfg.ReloadTokens delivers, until ctx ends or stop is called (which waits
// for the watcher to be gone).
func watchTokenReloads(ctx context.Context, cfg Config, tokens *auth.Tokens, generated bool, log *slog.Logger) (stop func()) {
	if cfg.ReloadTokens == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-cfg.ReloadTokens:
			}
			next, err := reloadTokens(cfg, generated)
			if err != nil {
				log.Error("host tokens not reloaded: the ones in force stay", "err", err)
				continue
			}
			revoked := tokens.Replace(next)
			log.Info("host tokens reloaded", "tokens", tokens.IDs(), "revoked", revoked)
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// reloadTokens reads the hosts' tokens from where they came from at start.
func reloadTokens(cfg Config, generated bool) (*auth.Tokens, error) {
	if generated {
		g, err := auth.LoadOrGenerate(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		return g.Tokens, nil
	}
	next, err := auth.Load(cfg.Auth)
	if err != nil {
		return nil, err
	}
	if next.Empty() {
		return nil, fmt.Errorf("%w: a runner started with tokens of its own does not fall back to a generated one", errNoTokenLeft)
	}
	return next, nil
}
