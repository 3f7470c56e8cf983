package claude_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every exported name of the SDK says what it is in `go doc`, aliases of
// the wire types included: "re-exported" alone tells a reader nothing.
func TestEveryExportedTypeHasItsOwnDoc(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, spec := range gen.Specs {
				ts := spec.(*ast.TypeSpec)
				if !ts.Name.IsExported() {
					continue
				}
				doc := ts.Doc
				if doc == nil && len(gen.Specs) == 1 {
					doc = gen.Doc
				}
				text := strings.TrimSpace(doc.Text())
				if !strings.HasPrefix(text, ts.Name.Name+" ") || strings.Contains(text, "re-exported") {
					t.Errorf("%s: type %s has no doc of its own: %q", fset.Position(ts.Pos()), ts.Name.Name, text)
				}
			}
		}
	}
}
