package sandbox_test

import (
	"testing"

	"github.com/tetherhq/tether/sandbox"
)

func sandboxBash(p sandbox.Policy, cmd string) string { return sandbox.BashCommand(p, cmd) }

// The rewritten command must run the original one byte for byte: compare
// what both print inside the same sandbox.
func TestBashCommandQuoting(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	p := f.policy()
	p.Network, p.NestedSandboxes = true, true
	cmds := []string{
		`echo hi`,
		`echo 'single' "double" "it's" 'say "hi"'`,
		`echo "$HOME" '$HOME' \$HOME ${PWD}`,
		"echo `echo backticks` $(echo dollar-paren)",
		"echo line1\necho line2\n\necho 'multi\nline'",
		`printf '%s|' a\ b "c  d" 'e\nf' \\ \'`,
		`x='a'\''b'; echo "$x"`,
		`echo x''''''y; echo "'"`,
		`echo ok; (echo sub); { echo group; }; echo a && echo b || echo c`,
		"echo tab\tsep; echo \"unicode: héllo ✓\"",
		`cat <<'EOF'
heredoc $HOME 'x' "y"
EOF`,
		`echo -n; echo -- -rf`,
		`false; echo "exit $?"`,
		`echo "*" *.none '[' ']' '#' ~ '~'`,
	}
	for _, cmd := range cmds {
		direct := bash(t, p, cmd)
		wrapped := bash(t, p, sandboxBash(p, cmd))
		if direct.stdout != wrapped.stdout || direct.code != wrapped.code || direct.stdout == "" {
			t.Errorf("command %q\ndirect  %q (exit %d)\nwrapped %q (exit %d) %s", cmd, direct.stdout, direct.code, wrapped.stdout, wrapped.code, wrapped.stderr)
		}
	}
}
