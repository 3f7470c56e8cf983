package sessions

import "fmt"

// FeedEnd is the position of the runner-wide feed's newest event (0 when
// it is empty): a reader that must stop at "now" (a catch-up, a count)
// reads the feed up to it.
func (m *Manager) FeedEnd() (uint64, error) {
	pos, err := m.cfg.Log.FeedLast()
	if err != nil {
		return 0, fmt.Errorf("sessions: feed end: %w", err)
	}
	return pos, nil
}

// FeedStart is the position of the feed's oldest event still retained
// (the log's retention drops the oldest): a reader that wants everything
// there is reads after FeedStart()-1.
func (m *Manager) FeedStart() (uint64, error) {
	pos, err := m.cfg.Log.FeedFirst()
	if err != nil {
		return 0, fmt.Errorf("sessions: feed start: %w", err)
	}
	return pos, nil
}
