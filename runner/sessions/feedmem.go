package sessions

import "slices"

// feedRecent is how many of the newest events the feed keeps in memory
// (between this and twice this).
const feedRecent = 4096

// keep adds the feed's newest event to what it keeps in memory (under
// f.mu, in position order).
func (f *feed) keep(fe FeedEvent) {
	if n := len(f.recent); n > 0 && f.recent[n-1].Pos+1 != fe.Pos {
		f.recent = f.recent[:0] // not the next one: start over rather than leave a gap
	}
	if len(f.recent) == 2*feedRecent {
		f.recent = append(f.recent[:0], f.recent[feedRecent:]...)
	}
	f.recent = append(f.recent, fe)
}

// since is what the feed keeps in memory after position after, and
// whether that is everything after it (false: read the log). after is a
// reader's cursor, any uint64: nothing here may wrap.
func (f *feed) since(after uint64) ([]FeedEvent, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.recent)
	if n == 0 {
		return nil, false
	}
	first, last := f.recent[0].Pos, f.recent[n-1].Pos
	switch {
	case after >= last:
		return nil, true
	case after < first-1: // positions start at 1, so first-1 does not wrap
		return nil, false
	}
	return slices.Clone(f.recent[after-(first-1):]), true
}
