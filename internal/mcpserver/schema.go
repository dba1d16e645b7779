package mcpserver

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

type jsonschemaSchema = jsonschema.Schema

// inputSchema is T's JSON schema (its fields' descriptions come from their
// jsonschema tags; fields without omitempty are required; no other
// properties), with enums for the named properties. An argument outside
// the schema is a tool error naming it before any API call.
func inputSchema[T any](enums map[string][]any) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: schema of %T: %v", *new(T), err))
	}
	for name, values := range enums {
		p := s.Properties[name]
		if p == nil {
			panic(fmt.Sprintf("mcpserver: %T has no property %q", *new(T), name))
		}
		p.Enum = values
	}
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	return s
}
