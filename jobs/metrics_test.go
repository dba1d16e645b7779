package jobs

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"
)

// downProvider fails every catalog call with a classified transient error.
type downProvider struct{ providers.Provider }

func (downProvider) Name() string { return "down" }
func (downProvider) ListOffers(context.Context) ([]providers.Offer, error) {
	return nil, &providers.Error{Class: providers.ErrTransient, Provider: "down", Op: "ListOffers", Message: "503"}
}

// OP3: each tick is counted and timed by job and outcome, and each failed
// provider call by provider, operation and class, on the registry main passes.
func TestJobAndProviderMetrics(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		store := models.NewStore(db, models.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)))
		reg := prometheus.NewRegistry()
		m, err := NewMetrics(reg)
		if err != nil {
			t.Fatal(err)
		}
		sched := NewScheduler(store, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err := Register(sched, Deps{Store: store, Providers: providers.Registry{"down": downProvider{}}, Metrics: m}); err != nil {
			t.Fatal(err)
		}
		if err := sched.RunNow(ctx, "catalog"); err == nil {
			t.Fatal("catalog tick with a failing provider succeeded")
		}
		if err := sched.RunNow(ctx, "provision"); err != nil {
			t.Fatal(err)
		}
		if ok, err := store.AcquireLease(ctx, "provision", "another-instance", time.Now(), time.Minute); !ok || err != nil {
			t.Fatalf("lease: %v %v", ok, err)
		}
		if err := sched.RunNow(ctx, "provision"); err != nil {
			t.Fatal(err)
		}

		got := gathered(t, reg)
		for series, want := range map[string]float64{
			`clusterdeck_job_runs_total{job_name=catalog,outcome=error}`:                     1,
			`clusterdeck_job_runs_total{job_name=catalog,outcome=ok}`:                        0,
			`clusterdeck_job_runs_total{job_name=provision,outcome=ok}`:                      1,
			`clusterdeck_job_runs_total{job_name=provision,outcome=skipped}`:                 1,
			`clusterdeck_job_duration_seconds{job_name=catalog,outcome=error}`:               1,
			`clusterdeck_job_duration_seconds{job_name=provision,outcome=ok}`:                1,
			`clusterdeck_provider_errors_total{class=transient,op=ListOffers,provider=down}`: 1,
		} {
			if v, ok := got[series]; !ok || v != want {
				t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
			}
		}
		if _, ok := got[`clusterdeck_job_duration_seconds{job_name=provision,outcome=skipped}`]; ok {
			t.Error("a skipped tick was timed")
		}
	})
}

// sickProvider fails the calls the health and recovery jobs make (R1, R5).
type sickProvider struct{ providers.Provider }

func (sickProvider) Name() string { return "sick" }
func (sickProvider) DescribeGroups(context.Context, []string) (map[string]providers.Group, error) {
	return nil, &providers.Error{Class: providers.ErrTransient, Provider: "sick", Op: "DescribeGroups", Message: "503"}
}
func (sickProvider) RestartNode(context.Context, string, string) error {
	return &providers.Error{Class: providers.ErrUnrecoverable, Provider: "sick", Op: "RestartNode", Message: "host gone"}
}

// OP3: the health pass's batch describe and recovery's restarts go through
// the counting wrapper like every other provider call.
func TestHealthProviderCallsAreCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	p := m.instrument(providers.Registry{"sick": sickProvider{}})["sick"]
	if _, err := p.DescribeGroups(context.Background(), []string{"cl_1"}); err == nil {
		t.Fatal("DescribeGroups succeeded")
	}
	if err := p.RestartNode(context.Background(), "cl_1", "n1"); err == nil {
		t.Fatal("RestartNode succeeded")
	}
	got := gathered(t, reg)
	for _, series := range []string{
		`clusterdeck_provider_errors_total{class=transient,op=DescribeGroups,provider=sick}`,
		`clusterdeck_provider_errors_total{class=unrecoverable,op=RestartNode,provider=sick}`,
	} {
		if got[series] != 1 {
			t.Errorf("%s = %v, want 1", series, got[series])
		}
	}
}

func TestErrorClass(t *testing.T) {
	for err, want := range map[error]string{
		&providers.Error{Class: providers.ErrUnrecoverable}: "unrecoverable",
		&providers.Error{Class: providers.ErrNoCapacity}:    "no_capacity",
		&providers.Error{Class: providers.ErrQuota}:         "quota",
		&providers.Error{Class: providers.ErrAuth}:          "auth",
		&providers.Error{Class: providers.ErrRateLimited}:   "rate_limited",
		context.DeadlineExceeded:                            "timeout",
		io.ErrUnexpectedEOF:                                 "unclassified",
	} {
		if got := ErrorClass(err); got != want {
			t.Errorf("ErrorClass(%v) = %q, want %q", err, got, want)
		}
	}
}

// gathered flattens reg into "name{k=v,...}" → value (a histogram's count).
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Histogram != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}
