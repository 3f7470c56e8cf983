package sessionsapi

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
)

type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		} `json:"schemas"`
	} `json:"components"`
}

func loadDoc(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal([]byte(openAPI), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// The document lists exactly the endpoints the handler serves.
func TestOpenAPIListsEveryRoute(t *testing.T) {
	doc := loadDoc(t)
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	var documented, served []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "parameters" {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	for _, rt := range (&api{}).routes() {
		served = append(served, rt.method+" "+rt.path)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Fatalf("documented\n  %v\nserved\n  %v", documented, served)
	}
}

// The document's schemas have exactly the fields the Go types encode.
func TestOpenAPISchemasMatchTypes(t *testing.T) {
	doc := loadDoc(t)
	for name, v := range map[string]any{
		"Session": sessions.Info{}, "Resolution": agent.Resolution{}, "Approval": agent.Approval{},
		"Item": agent.Item{}, "FileChange": agent.FileChange{}, "Event": agent.Event{}, "Question": agent.Question{},
		"Capabilities": agent.Capabilities{}, "CreateSession": createBody{}, "MCPServer": agent.MCPServer{}, "ResumeSession": resumeBody{}, "Resolve": resolveBody{}, "Prompt": promptBody{},
	} {
		schema, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("no schema %s", name)
			continue
		}
		var fields, props []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if tag != "" && tag != "-" {
				fields = append(fields, tag)
			}
		}
		for p := range schema.Properties {
			props = append(props, p)
		}
		slices.Sort(fields)
		slices.Sort(props)
		if !slices.Equal(fields, props) {
			t.Errorf("%s: the type encodes %v, the schema lists %v", name, fields, props)
		}
		for _, r := range schema.Required {
			if !slices.Contains(fields, r) {
				t.Errorf("%s requires %s, which the type lacks", name, r)
			}
		}
	}
}

// A prompt's images are documented as the API reads them: the fields of
// imageBody and the media types the agents take, one schema for a prompt's
// and a new session's first prompt's.
func TestOpenAPIPromptImages(t *testing.T) {
	type imagesProperty struct {
		Images struct {
			Items struct {
				Ref string `json:"$ref"`
			} `json:"items"`
		} `json:"images"`
	}
	var doc struct {
		Components struct {
			Schemas struct {
				Prompt struct {
					Properties imagesProperty `json:"properties"`
				} `json:"Prompt"`
				CreateSession struct {
					Properties imagesProperty `json:"properties"`
				} `json:"CreateSession"`
				Image struct {
					Required   []string `json:"required"`
					Properties struct {
						MediaType struct {
							Enum []string `json:"enum"`
						} `json:"media_type"`
					} `json:"properties"`
				} `json:"Image"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal([]byte(openAPI), &doc); err != nil {
		t.Fatal(err)
	}
	for what, ref := range map[string]string{"Prompt": doc.Components.Schemas.Prompt.Properties.Images.Items.Ref,
		"CreateSession": doc.Components.Schemas.CreateSession.Properties.Images.Items.Ref} {
		if ref != "#/components/schemas/Image" {
			t.Errorf("%s's images are %q, want the Image schema", what, ref)
		}
	}
	items := doc.Components.Schemas.Image
	var fields []string
	typ := reflect.TypeOf(imageBody{})
	for i := range typ.NumField() {
		tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		fields = append(fields, tag)
	}
	slices.Sort(fields)
	required := slices.Sorted(slices.Values(items.Required))
	if !slices.Equal(fields, required) {
		t.Errorf("an image's fields %v, documented as required %v", fields, required)
	}
	if got := items.Properties.MediaType.Enum; !slices.Equal(got, agent.ImageMediaTypes()) {
		t.Errorf("documented media types %v, the agents take %v", got, agent.ImageMediaTypes())
	}
}
