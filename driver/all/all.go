// Package all registers every agent kind tether has: a program that
// imports it offers them all (package driver). A new agent is a package
// under driver/ and one line here.
package all

import (
	_ "github.com/tetherhq/tether/driver/acp/gemini"
	_ "github.com/tetherhq/tether/driver/acp/opencodeacp"
	_ "github.com/tetherhq/tether/driver/claudecli"
	_ "github.com/tetherhq/tether/driver/codex"
	_ "github.com/tetherhq/tether/driver/mock"
	_ "github.com/tetherhq/tether/driver/opencode"
)
