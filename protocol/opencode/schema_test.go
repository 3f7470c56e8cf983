package opencode_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	oc "github.com/tetherhq/tether/protocol/opencode"
)

// The server's own OpenAPI 3.1 document (GET /doc of opencode serve
// 1.18.33) is the reference for every field name: these tests walk each
// struct and the schema it stands for, and fail on a Go field the schema
// does not have, a schema field Go does not type (unless listed below with
// the reason), a kind that does not match (string, number, boolean, array,
// object), and, for request bodies, a required field that could be left
// out or an optional one that would be sent empty.

type openAPI struct {
	t   *testing.T
	doc map[string]any
}

func loadOpenAPI(t *testing.T) *openAPI {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(readCapture(t, "serve-openapi.json"), &doc); err != nil {
		t.Fatal(err)
	}
	return &openAPI{t: t, doc: doc}
}

// at follows keys from the document's root; a "#/…" first key is a $ref.
func (o *openAPI) at(keys ...string) map[string]any {
	o.t.Helper()
	if len(keys) == 1 && strings.HasPrefix(keys[0], "#/") {
		keys = strings.Split(strings.TrimPrefix(keys[0], "#/"), "/")
	}
	var node any = o.doc
	for _, k := range keys {
		m, ok := node.(map[string]any)
		if !ok {
			o.t.Fatalf("openapi: %v: %q is not under an object", keys, k)
		}
		if node, ok = m[k]; !ok {
			o.t.Fatalf("openapi: %v: no %q", keys, k)
		}
	}
	m, ok := node.(map[string]any)
	if !ok {
		o.t.Fatalf("openapi: %v is not an object", keys)
	}
	return o.resolve(m)
}

func (o *openAPI) schema(name string) map[string]any { return o.at("components", "schemas", name) }

func (o *openAPI) resolve(m map[string]any) map[string]any {
	for range 20 {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		m = o.at(ref)
	}
	o.t.Fatal("openapi: $ref loop")
	return nil
}

// flatten expands anyOf and oneOf into their resolved variants.
func (o *openAPI) flatten(m map[string]any) []map[string]any {
	m = o.resolve(m)
	for _, key := range []string{"anyOf", "oneOf"} {
		if vs, ok := m[key].([]any); ok {
			var out []map[string]any
			for _, v := range vs {
				out = append(out, o.flatten(v.(map[string]any))...)
			}
			return out
		}
	}
	return []map[string]any{m}
}

func (o *openAPI) flattenAll(ms ...map[string]any) []map[string]any {
	var out []map[string]any
	for _, m := range ms {
		out = append(out, o.flatten(m)...)
	}
	return out
}

// requestBody is an operation's JSON request schema.
func (o *openAPI) requestBody(path, method string) map[string]any {
	return o.at("paths", path, method, "requestBody", "content", "application/json", "schema")
}

// response is an operation's JSON answer schema for a status.
func (o *openAPI) response(path, method, status string) map[string]any {
	return o.at("paths", path, method, "responses", status, "content", "application/json", "schema")
}

type goField struct {
	typ       reflect.Type
	omitempty bool
}

// jsonFields lists a struct's JSON fields as encoding/json sees them:
// embedded structs flattened, "-" and unexported fields left out.
func jsonFields(typ reflect.Type) map[string]goField {
	out := map[string]goField{}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		name, opts, _ := strings.Cut(tag, ",")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && !hasTag && f.Type.Kind() == reflect.Struct {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = goField{typ: f.Type, omitempty: strings.Contains(opts, "omitempty")}
	}
	return out
}

var (
	rawMessageType     = reflect.TypeFor[json.RawMessage]()
	millisType         = reflect.TypeFor[oc.Millis]()
	partsType          = reflect.TypeFor[oc.Parts]()
	messageSummaryType = reflect.TypeFor[oc.MessageSummary]()
)

type schemaCheck struct {
	o *openAPI
	// untyped lists, per Go type, the schema fields left out on purpose.
	untyped map[reflect.Type][]string
	// implicit lists, per Go type, fields its MarshalJSON adds.
	implicit map[reflect.Type][]string
	// unionOf gives, for a struct that holds every member of a union, the
	// whole union: where a schema is one member (an AssistantMessage, an
	// APIError), the other members' fields are not errors.
	unionOf map[reflect.Type][]map[string]any
	request bool
}

func schemaType(m map[string]any) string {
	s, _ := m["type"].(string)
	return s
}

// object checks a struct against one or more object schemas (the variants
// of a union are merged: each Go field must be in one of them).
func (c *schemaCheck) object(t *testing.T, where string, typ reflect.Type, schemas []map[string]any) {
	t.Helper()
	props := map[string][]map[string]any{}
	for _, s := range schemas {
		if st := schemaType(s); st != "" && st != "object" {
			t.Errorf("%s: Go struct %s for a schema of type %s", where, typ, st)
			return
		}
		p, _ := s["properties"].(map[string]any)
		for name, ps := range p {
			props[name] = append(props[name], ps.(map[string]any))
		}
	}
	fields := jsonFields(typ)
	for name := range fields {
		if _, ok := props[name]; !ok && !c.inUnion(typ, name) {
			t.Errorf("%s.%s: Go field (%s) not in the schema, which has %v", where, name, typ, sortedKeys(props))
		}
	}
	for name := range props {
		if _, ok := fields[name]; ok || slices.Contains(c.untyped[typ], name) || slices.Contains(c.implicit[typ], name) {
			continue
		}
		t.Errorf("%s.%s: schema field not typed in %s", where, name, typ)
	}
	if c.request && len(schemas) == 1 {
		required := map[string]bool{}
		if rs, ok := schemas[0]["required"].([]any); ok {
			for _, r := range rs {
				required[r.(string)] = true
			}
		}
		for name, f := range fields {
			switch {
			case required[name] && f.omitempty:
				t.Errorf("%s.%s: required, but omitempty could leave it out", where, name)
			case !required[name] && !f.omitempty:
				t.Errorf("%s.%s: optional, but sent even when empty (no omitempty)", where, name)
			}
		}
	}
	for name, f := range fields {
		if cands, ok := props[name]; ok {
			c.value(t, where+"."+name, f.typ, c.o.flattenAll(cands...))
		}
	}
}

func (c *schemaCheck) inUnion(typ reflect.Type, name string) bool {
	for _, s := range c.unionOf[typ] {
		if p, ok := s["properties"].(map[string]any); ok && p[name] != nil {
			return true
		}
	}
	return false
}

// value checks a Go type against candidate schemas (a field's, per
// variant).
func (c *schemaCheck) value(t *testing.T, where string, typ reflect.Type, cands []map[string]any) {
	t.Helper()
	switch typ {
	case rawMessageType, partsType, messageSummaryType:
		// Any JSON; Parts and MessageSummary are checked on their own.
		if typ == partsType {
			c.kinds(t, where, typ, cands, "array")
		}
		return
	case millisType:
		c.kinds(t, where, typ, cands, "integer", "number")
		return
	}
	switch typ.Kind() {
	case reflect.Pointer:
		c.value(t, where, typ.Elem(), cands)
	case reflect.Interface:
		// Part and PartInput unions: each member is checked on its own.
	case reflect.Struct:
		var objs []map[string]any
		for _, s := range cands {
			if st := schemaType(s); st == "" || st == "object" {
				objs = append(objs, s)
			} else {
				t.Errorf("%s: Go struct %s for a schema of type %s", where, typ, st)
			}
		}
		c.object(t, where, typ, objs)
	case reflect.Slice:
		c.kinds(t, where, typ, cands, "array")
		var items []map[string]any
		for _, s := range cands {
			if it, ok := s["items"].(map[string]any); ok {
				items = append(items, c.o.flatten(it)...)
			}
		}
		c.value(t, where+"[]", typ.Elem(), items)
	case reflect.Map:
		c.kinds(t, where, typ, cands, "object")
		var vals []map[string]any
		for _, s := range cands {
			if ap, ok := s["additionalProperties"].(map[string]any); ok {
				vals = append(vals, c.o.flatten(ap)...)
			}
		}
		c.value(t, where+"{}", typ.Elem(), vals)
	case reflect.String:
		c.kinds(t, where, typ, cands, "string")
	case reflect.Bool:
		c.kinds(t, where, typ, cands, "boolean")
	case reflect.Int, reflect.Int64:
		c.kinds(t, where, typ, cands, "integer")
	case reflect.Float64:
		c.kinds(t, where, typ, cands, "number", "integer")
	default:
		t.Errorf("%s: unexpected Go kind %s", where, typ)
	}
}

// kinds requires every candidate that names a type to name one of want.
func (c *schemaCheck) kinds(t *testing.T, where string, typ reflect.Type, cands []map[string]any, want ...string) {
	t.Helper()
	for _, s := range cands {
		if st := schemaType(s); st != "" && !slices.Contains(want, st) {
			t.Errorf("%s: Go %s for a schema of type %s", where, typ, st)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func newCheck(o *openAPI) *schemaCheck {
	return &schemaCheck{o: o, untyped: map[reflect.Type][]string{}, unionOf: map[reflect.Type][]map[string]any{
		reflect.TypeFor[oc.Message]():    o.flatten(o.schema("Message")),
		reflect.TypeFor[oc.NamedError](): o.flatten(o.at("components", "schemas", "AssistantMessage", "properties", "error")),
		// NamedErrorData is the union's data: merge every member's.
		reflect.TypeFor[oc.NamedErrorData](): dataSchemas(o),
	}, implicit: map[reflect.Type][]string{
		// The prompt inputs' MarshalJSON writes their type.
		reflect.TypeFor[oc.TextInput]():    {"type"},
		reflect.TypeFor[oc.FileInput]():    {"type"},
		reflect.TypeFor[oc.AgentInput]():   {"type"},
		reflect.TypeFor[oc.SubtaskInput](): {"type"},
	}}
}

// dataSchemas is the data schema of every named error.
func dataSchemas(o *openAPI) []map[string]any {
	var out []map[string]any
	for _, e := range o.flatten(o.at("components", "schemas", "AssistantMessage", "properties", "error")) {
		out = append(out, o.flatten(e["properties"].(map[string]any)["data"].(map[string]any))...)
	}
	return out
}

func TestSchemaResponseBodies(t *testing.T) {
	o := loadOpenAPI(t)
	c := newCheck(o)
	cases := []struct {
		name   string
		typ    reflect.Type
		schema []map[string]any
	}{
		{"Health", reflect.TypeFor[oc.Health](), o.flatten(o.response("/global/health", "get", "200"))},
		{"Session", reflect.TypeFor[oc.Session](), o.flatten(o.schema("Session"))},
		{"POST /session", reflect.TypeFor[oc.Session](), o.flatten(o.response("/session", "post", "200"))},
		{"fork", reflect.TypeFor[oc.Session](), o.flatten(o.response("/session/{sessionID}/fork", "post", "200"))},
		{"revert", reflect.TypeFor[oc.Session](), o.flatten(o.response("/session/{sessionID}/revert", "post", "200"))},
		{"Message", reflect.TypeFor[oc.Message](), o.flatten(o.schema("Message"))},
		{"GET messages", reflect.TypeFor[oc.MessageWithParts](), o.flatten(o.at("paths", "/session/{sessionID}/message", "get", "responses", "200", "content", "application/json", "schema", "items"))},
		{"POST message", reflect.TypeFor[oc.MessageWithParts](), o.flatten(o.response("/session/{sessionID}/message", "post", "200"))},
		{"GET message", reflect.TypeFor[oc.MessageWithParts](), o.flatten(o.response("/session/{sessionID}/message/{messageID}", "get", "200"))},
		{"PermissionRequest", reflect.TypeFor[oc.PermissionRequest](), o.flatten(o.schema("PermissionRequest"))},
		{"GET permission", reflect.TypeFor[oc.PermissionRequest](), o.flatten(o.at("paths", "/permission", "get", "responses", "200", "content", "application/json", "schema", "items"))},
		{"QuestionRequest", reflect.TypeFor[oc.QuestionRequest](), o.flatten(o.schema("QuestionRequest"))},
		{"FileDiff", reflect.TypeFor[oc.FileDiff](), o.flatten(o.schema("SnapshotFileDiff"))},
		{"GET diff", reflect.TypeFor[oc.FileDiff](), o.flatten(o.at("paths", "/session/{sessionID}/diff", "get", "responses", "200", "content", "application/json", "schema", "items"))},
		{"SessionStatus", reflect.TypeFor[oc.SessionStatus](), o.flatten(o.schema("SessionStatus"))},
		{"GET session status", reflect.TypeFor[oc.SessionStatus](), o.flatten(o.at("paths", "/session/status", "get", "responses", "200", "content", "application/json", "schema", "additionalProperties"))},
		{"Todo", reflect.TypeFor[oc.Todo](), o.flatten(o.schema("Todo"))},
		{"NamedError", reflect.TypeFor[oc.NamedError](), o.flatten(o.at("components", "schemas", "AssistantMessage", "properties", "error"))},
		{"ToolState", reflect.TypeFor[oc.ToolState](), o.flatten(o.schema("ToolState"))},
		{"FilePartSource", reflect.TypeFor[oc.FilePartSource](), o.flatten(o.schema("FilePartSource"))},
		{"ErrorBody", reflect.TypeFor[oc.ErrorBody](), o.flattenAll(o.schema("BadRequestError"), o.schema("NotFoundError"),
			o.schema("InvalidRequestError"), o.schema("effect_HttpApiError_BadRequest"), o.schema("SessionBusyError"), o.schema("PermissionNotFoundError"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { c.object(t, tc.name, tc.typ, tc.schema) })
	}

	t.Run("MessageSummary", func(t *testing.T) {
		user := o.at("components", "schemas", "UserMessage", "properties", "summary")
		c.object(t, "UserMessage.summary", messageSummaryType, o.flatten(user))
		if st := schemaType(o.at("components", "schemas", "AssistantMessage", "properties", "summary")); st != "boolean" {
			t.Errorf("AssistantMessage.summary is %q, MessageSummary reads it as a boolean", st)
		}
	})
}

func TestSchemaParts(t *testing.T) {
	o := loadOpenAPI(t)
	c := newCheck(o)
	parts := map[string]oc.Part{
		"TextPart": &oc.TextPart{}, "ReasoningPart": &oc.ReasoningPart{}, "ToolPart": &oc.ToolPart{},
		"StepStartPart": &oc.StepStartPart{}, "StepFinishPart": &oc.StepFinishPart{}, "FilePart": &oc.FilePart{},
		"PatchPart": &oc.PatchPart{}, "SnapshotPart": &oc.SnapshotPart{}, "AgentPart": &oc.AgentPart{},
		"RetryPart": &oc.RetryPart{}, "CompactionPart": &oc.CompactionPart{}, "SubtaskPart": &oc.SubtaskPart{},
	}
	// Every member of the Part union is typed, under the type it declares.
	for _, variant := range o.at("components", "schemas", "Part")["anyOf"].([]any) {
		name := strings.TrimPrefix(variant.(map[string]any)["$ref"].(string), "#/components/schemas/")
		p, ok := parts[name]
		if !ok {
			t.Errorf("Part member %s not typed", name)
			continue
		}
		s := o.schema(name)
		typ := s["properties"].(map[string]any)["type"].(map[string]any)["enum"].([]any)[0].(string)
		decoded, err := oc.DecodePart([]byte(`{"type":"` + typ + `","id":"prt_1","sessionID":"ses_1","messageID":"msg_1"}`))
		if err != nil || reflect.TypeOf(decoded) != reflect.TypeOf(p) {
			t.Errorf("type %q decodes to %T (%v), want %T", typ, decoded, err, p)
		}
		t.Run(name, func(t *testing.T) { c.object(t, name, reflect.TypeOf(p).Elem(), []map[string]any{s}) })
		delete(parts, name)
	}
	for name := range parts {
		t.Errorf("%s is typed but not a Part member", name)
	}
}

func TestSchemaRequestBodies(t *testing.T) {
	o := loadOpenAPI(t)
	c := newCheck(o)
	c.request = true
	cases := []struct {
		name   string
		typ    reflect.Type
		schema map[string]any
	}{
		{"POST /session", reflect.TypeFor[oc.CreateSessionRequest](), o.requestBody("/session", "post")},
		{"POST message", reflect.TypeFor[oc.PromptRequest](), o.requestBody("/session/{sessionID}/message", "post")},
		{"POST prompt_async", reflect.TypeFor[oc.PromptRequest](), o.requestBody("/session/{sessionID}/prompt_async", "post")},
		{"POST permission reply", reflect.TypeFor[oc.PermissionReplyRequest](), o.requestBody("/permission/{requestID}/reply", "post")},
		{"POST fork", reflect.TypeFor[oc.ForkRequest](), o.requestBody("/session/{sessionID}/fork", "post")},
		{"POST revert", reflect.TypeFor[oc.RevertRequest](), o.requestBody("/session/{sessionID}/revert", "post")},
		{"POST question reply", reflect.TypeFor[oc.QuestionReplyRequest](), o.requestBody("/question/{requestID}/reply", "post")},
		{"TextPartInput", reflect.TypeFor[oc.TextInput](), o.schema("TextPartInput")},
		{"FilePartInput", reflect.TypeFor[oc.FileInput](), o.schema("FilePartInput")},
		{"AgentPartInput", reflect.TypeFor[oc.AgentInput](), o.schema("AgentPartInput")},
		{"SubtaskPartInput", reflect.TypeFor[oc.SubtaskInput](), o.schema("SubtaskPartInput")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { c.object(t, tc.name, tc.typ, o.flatten(tc.schema)) })
	}

	// The inputs' types, which their MarshalJSON writes, are the union's.
	var inputTypes []string
	for _, v := range o.flatten(o.at("paths", "/session/{sessionID}/message", "post", "requestBody", "content", "application/json", "schema", "properties", "parts", "items")) {
		inputTypes = append(inputTypes, v["properties"].(map[string]any)["type"].(map[string]any)["enum"].([]any)[0].(string))
	}
	req := oc.PromptRequest{Parts: []oc.PartInput{oc.TextInput{Text: "t"}, oc.FileInput{Mime: "m", URL: "u"},
		oc.AgentInput{Name: "a"}, oc.SubtaskInput{Prompt: "p", Description: "d", Agent: "a"}}}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var sent struct{ Parts []struct{ Type string } }
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	var sentTypes []string
	for _, p := range sent.Parts {
		sentTypes = append(sentTypes, p.Type)
	}
	if !reflect.DeepEqual(sentTypes, inputTypes) {
		t.Errorf("prompt parts marshal with types %v, the schema's are %v", sentTypes, inputTypes)
	}
}

// leftUnknown says which event types of the document decode to *Unknown
// and why; a type a newer server adds fails the test until it is typed or
// listed here.
func leftUnknown(typ string) bool {
	for _, prefix := range []string{
		"session.next.",  // the v2 session event stream, sent only to its own endpoints
		"permission.v2.", // the v2 permission API (/api/…)
		"question.v2.",
		"pty.",          // terminals opened through the API
		"tui.",          // remote control of a TUI
		"workspace.",    // remote workspaces
		"worktree.",     // git worktrees the app creates
		"installation.", // self-update notices
		"mcp.",          // MCP servers' tool lists and OAuth
	} {
		if strings.HasPrefix(typ, prefix) {
			return true
		}
	}
	switch typ {
	case "integration.connection.updated", "project.directories.updated", "project.updated",
		"file.watcher.updated", "vcs.branch.updated", "command.executed":
		return true // project and catalog state, not a session's work
	}
	return false
}

func TestSchemaEvents(t *testing.T) {
	o := loadOpenAPI(t)
	c := newCheck(o)
	inDoc := map[string]bool{}
	for _, variant := range o.at("components", "schemas", "Event")["anyOf"].([]any) {
		s := o.resolve(variant.(map[string]any))
		props := s["properties"].(map[string]any)
		typ := props["type"].(map[string]any)["enum"].([]any)[0].(string)
		inDoc[typ] = true
		p := oc.NewPayload(typ)
		if p.EventType() != typ {
			t.Errorf("%s: payload %T says %s", typ, p, p.EventType())
		}
		switch p.(type) {
		case *oc.Unknown:
			if !leftUnknown(typ) {
				t.Errorf("event type %s is neither typed nor listed as left unknown", typ)
			}
			continue
		case *oc.Noise:
			if typ != oc.EventPluginAdded {
				continue // no fields
			}
		}
		if leftUnknown(typ) {
			t.Errorf("event type %s is typed and listed as left unknown", typ)
		}
		t.Run(typ, func(t *testing.T) {
			c.object(t, typ, reflect.TypeOf(p).Elem(), o.flatten(props["properties"].(map[string]any)))
		})
	}
	for _, typ := range []string{
		oc.EventServerConnected, oc.EventInstanceDisposed, oc.EventGlobalDisposed, oc.EventSessionCreated,
		oc.EventSessionUpdated, oc.EventSessionDeleted, oc.EventSessionStatus, oc.EventSessionIdle, oc.EventSessionDiff,
		oc.EventSessionError, oc.EventSessionCompacted, oc.EventMessageUpdated, oc.EventMessageRemoved,
		oc.EventMessagePartUpdated, oc.EventMessagePartDelta, oc.EventMessagePartRemoved, oc.EventPermissionAsked,
		oc.EventPermissionReplied, oc.EventQuestionAsked, oc.EventQuestionReplied, oc.EventQuestionRejected,
		oc.EventTodoUpdated, oc.EventFileEdited, oc.EventPluginAdded, oc.EventCatalogUpdated,
		oc.EventIntegrationUpdated, oc.EventReferenceUpdated, oc.EventModelsDevRefreshed, oc.EventLSPUpdated,
	} {
		if !inDoc[typ] {
			t.Errorf("typed event %s is not in the document", typ)
		}
	}
	// The heartbeat is sent (see the captures) but not documented.
	if inDoc[oc.EventServerHeartbeat] {
		t.Errorf("%s is documented now: move it to the list above", oc.EventServerHeartbeat)
	}
}
