package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/static"
	"github.com/clusterdeck/clusterdeck/web"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// downCloud fails every catalog call, so the job and provider metrics have
// series of every kind.
type downCloud struct{ providers.Provider }

func (downCloud) Name() string { return "down" }
func (downCloud) ListOffers(context.Context) ([]providers.Offer, error) {
	return nil, &providers.Error{Class: providers.ErrTransient, Provider: "down", Op: "ListOffers", Message: "503"}
}

// OP3: the whole /metrics of a server, as main wires
// it, is valid text exposition in which no metric carries Prometheus's own
// target labels (job, instance: a real scrape renames them exported_…), and
// every query of docs/operating.md's Metrics section names metrics and labels that
// exist there, with label values that match something.
func TestOperatingMetricQueriesMatchTheExposition(t *testing.T) {
	ctx := context.Background()
	store := models.NewStore(modelstest.Open(t, "sqlite"), nil)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg, jobMetrics, err := newMetrics()
	if err != nil {
		t.Fatal(err)
	}
	sched := jobs.NewScheduler(store, log)
	if err := jobs.Register(sched, jobs.Deps{Store: store, Providers: providers.Registry{"down": downCloud{}}, Metrics: jobMetrics}); err != nil {
		t.Fatal(err)
	}
	_ = sched.RunNow(ctx, "catalog") // fails: the provider is down
	offer := models.Offer{ProviderOffer: "o1", Location: "loc", LocationName: "Loc", Interconnect: "infiniband", MachineKind: "vm",
		Accelerator: "H100_80GB", GPUsPerNode: 8, PerGPUHour: 2 * models.Micro, Available: true, BootSeconds: 240}
	if err := store.ReplaceOffers(ctx, "sim", []models.Offer{offer}, store.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Deposit(ctx, "org_x", 25*models.Micro, "dep", "test"); err != nil {
		t.Fatal(err)
	}
	util, used, total := 80, 40000, 81559 // a running cluster's GPU reported this minute (X15)
	if err := store.DB().Create(&models.GPUPoint{ClusterID: "cl_x", At: store.Now().Unix() / 60 * 60, N: 1,
		Util: &util, MemUsed: &used, MemTotal: &total}).Error; err != nil {
		t.Fatal(err)
	}
	srv := web.New(web.Deps{Config: web.Config{MetricsToken: "tok"}, Store: store, Log: log, Static: static.FS, Metrics: reg})
	srv.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/healthz", nil))
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Authorization", "Bearer tok")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("not valid text exposition: %v", err)
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if n := l.GetName(); n == "job" || n == "instance" || strings.HasPrefix(n, "exported_") || strings.HasPrefix(n, "__") {
					t.Errorf("%s has the label %q, which a Prometheus scrape renames or reserves", name, n)
				}
			}
		}
	}

	readme, err := os.ReadFile("docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	section = section[strings.Index(section, "## Metrics\n"):]
	section = section[:len("## Metrics\n")+strings.Index(section[len("## Metrics\n"):], "\n## ")]
	blocks := regexp.MustCompile("(?s)```promql\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(blocks) == 0 {
		t.Fatal("docs/operating.md's Metrics section has no promql block")
	}
	selector := regexp.MustCompile(`\b((?:clusterdeck|go|process)_[a-z0-9_]+)(\{([^}]*)\})?`)
	matcher := regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)\s*"([^"]*)"\s*$`)
	grouping := regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	queries := 0
	for _, b := range blocks {
		for _, q := range strings.Split(b[1], "\n") {
			if q = strings.TrimSpace(q); q == "" || strings.HasPrefix(q, "#") {
				continue
			}
			queries++
			labels := map[string]bool{} // every label of the metrics the query reads
			for _, sel := range selector.FindAllStringSubmatch(q, -1) {
				f, extra := family(fams, sel[1])
				if f == nil {
					t.Errorf("%s: no metric %s in the exposition", q, sel[1])
					continue
				}
				have := labelValues(f)
				for _, l := range extra {
					have[l] = map[string]bool{"*": true}
				}
				for l := range have {
					labels[l] = true
				}
				if sel[3] == "" {
					continue
				}
				for _, m := range strings.Split(sel[3], ",") {
					g := matcher.FindStringSubmatch(m)
					if g == nil {
						t.Errorf("%s: cannot read the matcher %q", q, m)
						continue
					}
					if have[g[1]] == nil {
						t.Errorf("%s: %s has no label %q (it has %v)", q, sel[1], g[1], keys(have))
					} else if g[2] == "=" && !have[g[1]][g[3]] && !have[g[1]]["*"] {
						t.Errorf("%s: no series of %s has %s=%q", q, sel[1], g[1], g[3])
					}
				}
			}
			for _, g := range grouping.FindAllStringSubmatch(q, -1) {
				for _, l := range strings.Split(g[1], ",") {
					if l = strings.TrimSpace(l); !labels[l] {
						t.Errorf("%s: groups by %q, which none of its metrics has", q, l)
					}
				}
			}
		}
	}
	if queries < 5 {
		t.Errorf("only %d queries checked", queries)
	}
	// The label lists written in the prose, like clusterdeck_clusters{status}.
	for _, m := range regexp.MustCompile("`((?:clusterdeck)_[a-z0-9_]+)\\{([a-z_,]+)\\}`").FindAllStringSubmatch(section, -1) {
		f, _ := family(fams, m[1])
		if f == nil {
			t.Errorf("docs/operating.md names %s, which the exposition lacks", m[1])
			continue
		}
		have := labelValues(f)
		for _, l := range strings.Split(m[2], ",") {
			if have[l] == nil {
				t.Errorf("docs/operating.md gives %s the label %q; it has %v", m[1], l, keys(have))
			}
		}
	}
}

// family finds a metric's family: itself, or the histogram or summary whose
// _bucket, _sum or _count series it is (extra: the labels those add).
func family(fams map[string]*dto.MetricFamily, name string) (*dto.MetricFamily, []string) {
	if f := fams[name]; f != nil {
		return f, nil
	}
	for suffix, extra := range map[string][]string{"_bucket": {"le"}, "_sum": nil, "_count": nil} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f := fams[base]; f != nil && (f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY) {
				return f, extra
			}
		}
	}
	return nil, nil
}

// labelValues is every label of a family with the values its series have.
func labelValues(f *dto.MetricFamily) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if out[l.GetName()] == nil {
				out[l.GetName()] = map[string]bool{}
			}
			out[l.GetName()][l.GetValue()] = true
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
