// Package opencode owns the wire format of `opencode serve` (OpenCode
// 1.18.33): the text/event-stream body of GET /event, the bus events it
// carries, and the JSON bodies of the HTTP endpoints a driver calls. It is
// pure: it parses and builds bytes and paths and never opens a connection or
// starts a process.
//
// The layers, from the bottom:
//
//   - SSEReader cuts a text/event-stream body into SSEEvents (data, event,
//     id and retry fields, comments, CRLF, LF or CR line ends) under a size
//     cap; WriteSSE writes one back.
//   - DecodeEvent turns an event's data, {"id","type","properties"}, into an
//     Event whose Payload is typed for the events a driver reads (sessions,
//     messages and their parts, text deltas, permissions, questions, todos,
//     errors) and *Unknown for any other type, never dropped. Every Event
//     keeps its exact bytes (Raw) for relaying. EventReader does both.
//   - Request and response bodies of the session, message, permission and
//     question endpoints, with helpers that build their paths (ids escaped
//     and checked), and ParseResponseError for the error bodies.
//
// The field names are those of the server's own OpenAPI document (GET /doc);
// the tests hold every struct to it. Decoded strings and raw values alias
// the data they came from (an event's Raw), which must therefore not be
// modified while they live.
package opencode
