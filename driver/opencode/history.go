package opencode

import (
	"encoding/json"
	"time"

	"github.com/tetherhq/tether/agent"
	oc "github.com/tetherhq/tether/protocol/opencode"
)

// historyItems is a session's messages as completed items, mapped part by
// part as the event stream's parts are. Parts still running (a turn in
// progress) are left out: only whole items are history.
func historyItems(session string, msgs []oc.MessageWithParts) []agent.Item {
	m := newMapper(session, func() time.Time { return time.Time{} })
	var items []agent.Item
	for _, msg := range msgs {
		m.roles[msg.Info.ID] = msg.Info.Role
		for _, part := range msg.Parts {
			raw, _ := json.Marshal(part)
			for _, e := range m.partUpdated(part, raw) {
				if e.Kind == agent.KindItemCompleted {
					items = append(items, *e.Item)
				}
			}
		}
	}
	return items
}
