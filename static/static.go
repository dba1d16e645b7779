// Package static embeds the dashboard's assets: the built Tailwind CSS, the
// vendored htmx 2.0.11 and its SSE extension 2.2.4, and small scripts.
package static

import "embed"

// FS holds css/ and js/.
//
//go:embed css/app.css js
var FS embed.FS
