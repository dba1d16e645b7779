package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkOffersPage reports the offers page's server time with 2,000 offers
// in the catalog, and the SQL statements each request runs (sql/op), which
// must not grow with the catalog (see TestOffersPageStatementsDoNotGrow).
// "baseline" serves /healthz through the same router, so the ratio between
// the two is the page's own cost on whatever machine runs it.
func BenchmarkOffersPage(b *testing.B) {
	app := newTestApp(b, openSQLite(b))
	app.seedOffers(manyOffers(2000)...)
	for _, bc := range []struct{ name, path string }{
		{"baseline", "/healthz"},
		{"full", "/offers?accelerator=H100_80GB&nodes=4"},
		{"htmx", "/offers?accelerator=H100_80GB&nodes=4&include_community=true"},
		{"api", "/v1/gpu/offers?accelerator=H100_80GB&nodes=4"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, bc.path, nil)
			if bc.name == "htmx" {
				req.Header.Set("HX-Request", "true")
			}
			before := app.sql.n.Load()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rec := httptest.NewRecorder()
				app.e.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
			}
			b.ReportMetric(float64(app.sql.n.Load()-before)/float64(b.N), "sql/op")
		})
	}
}
