// Package static embeds the dashboard's assets: the built Tailwind CSS, the
// vendored htmx 2.0.11 and its SSE extension 2.2.4, small scripts, the
// favicon (img/favicon.svg), and the REST API's OpenAPI document
// (openapi.json, served at /v1/openapi.json).
package static

import "embed"

// FS holds css/, js/, img/ and openapi.json.
//
//go:embed css/app.css js img openapi.json
var FS embed.FS
