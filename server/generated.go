package server

import (
	"log/slog"

	"github.com/tetherhq/tether/runner/auth"
)

// announceGenerated says where the generated token is and how hosts use
// it, and records its file for hosts on this machine (auth.LocalToken).
// It logs the file's path and the token's id, never the token: a log may
// travel further than the data directory's owner. The returned func
// removes the record.
func announceGenerated(cfg Config, addr string, g *auth.Generated, log *slog.Logger) (remove func()) {
	log.Info("no token configured: hosts authenticate with the generated one in token_file (tether run --runner on this machine finds it; other hosts send it as a bearer token)",
		"token_file", g.File, "token", g.Tokens.IDs()[0], "new", g.Created)
	dir := cfg.RecordDir
	if dir == "" {
		d, err := auth.DefaultRecordDir()
		if err != nil {
			log.Warn("tether run will not find the generated token by itself: give it --runner-token", "err", err)
			return func() {}
		}
		dir = d
	}
	remove, err := auth.Publish(dir, addr, g.File)
	if err != nil {
		log.Warn("tether run will not find the generated token by itself: give it --runner-token", "err", err)
		return func() {}
	}
	return remove
}
