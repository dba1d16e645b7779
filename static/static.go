// Package static embeds the dashboard's assets: the built Tailwind CSS, the
// vendored htmx 2.0.11 and its SSE extension 2.2.4, small scripts, and the
// REST API's OpenAPI document (openapi.json, served at /v1/openapi.json).
package static

import "embed"

// FS holds css/, js/ and openapi.json.
//
//go:embed css/app.css js openapi.json
var FS embed.FS
