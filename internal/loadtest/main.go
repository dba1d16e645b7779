// Command loadtest measures the offers page under load on loopback (O3): the full page, its htmx partial and the JSON API, at the default
// simulated catalog and at 2,000 catalog offers, each beside a bare Echo
// handler that returns the same pre-rendered bytes in the same run. It
// prints req/s, p50 and p99 for both and their ratios, then the size of a
// first visit to /offers (HTML, CSS and JS, gzipped); then one tenant's
// agent flood beside another tenant's requests (tenant.go, X19). Every run is bounded
// in requests and time and stops by itself. `make load` runs it:
//
//	go run ./internal/loadtest -clients 32 -duration 3s
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"github.com/clusterdeck/clusterdeck/static"
	"github.com/clusterdeck/clusterdeck/web"
)

func main() {
	clients := flag.Int("clients", 32, "concurrent clients")
	duration := flag.Duration("duration", 3*time.Second, "how long each measurement runs")
	maxRequests := flag.Int("requests", 50_000, "most requests in one measurement")
	catalogSize := flag.Int("offers", 2000, "offers in the large catalog")
	limit := flag.Duration("timeout", 5*time.Minute, "the whole run stops after this")
	only := flag.String("only", "", "measure only the pages whose name contains this (\"full\", \"htmx\", \"JSON\"), at the default catalog, or \"tenant\": one tenant's flood beside another")
	hold := flag.Duration("refusal-hold", 0, "how long the server holds a 429 of the agent and metrics limits (0: its default, web.RefusalHold; negative: not held)")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (server and clients) to this file")
	flag.Parse()
	if *profile != "" {
		f, err := os.Create(*profile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadtest:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, cancel := context.WithTimeout(context.Background(), *limit)
	defer cancel()
	if err := run(ctx, os.Stdout, load{clients: *clients, duration: *duration, max: *maxRequests, only: *only, hold: *hold}, *catalogSize); err != nil {
		pprof.StopCPUProfile() // a failed run's profile is the one that tells why
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1) //nolint:gocritic // the profile is written above
	}
}

// pages are the three ways the offers page is read. The pages ask for every
// machine size (the page's default is the largest), so they show what the
// JSON lists.
var pages = []struct {
	name, path string
	htmx       bool
}{
	{"offers (full)", "/offers?accelerator=H100_80GB&nodes=4&gpus_per_node=any", false},
	{"offers (htmx)", "/offers?accelerator=H100_80GB&nodes=4&gpus_per_node=any", true},
	{"offers (JSON)", "/v1/gpu/offers?accelerator=H100_80GB&nodes=4", false},
}

func run(ctx context.Context, out io.Writer, l load, catalogSize int) error {
	dir, err := os.MkdirTemp("", "clusterdeck-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := models.Open("", dir+"/load.db")
	if err != nil {
		return err
	}
	if _, err := models.Migrate(ctx, db); err != nil {
		return err
	}
	store := models.NewStoreWith(db, nil, models.Settings{WebhookClusterView: web.WebhookClusterView}) // as main builds it
	catalog := &jobs.Catalog{Store: store, Providers: providers.Registry{"sim": sim.New(sim.DefaultConfig())}}
	if err := catalog.Run(ctx); err != nil {
		return err
	}
	e := web.New(web.Deps{
		Config: web.Config{Production: true, BaseURL: "http://127.0.0.1",
			SessionAuthKey: []byte(strings.Repeat("k", 64)), SessionEncKey: []byte(strings.Repeat("e", 32))},
		Store: store, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Static: static.FS, RefusalHold: l.hold,
	})
	app, err := listen(e)
	if err != nil {
		return err
	}
	defer app.close()

	fmt.Fprintf(out, "%d clients, %s or %d requests per measurement, loopback, GOMAXPROCS %d\n\n", l.clients, l.duration, l.max, gomaxprocs())
	fmt.Fprintf(out, "%-9s %-14s %7s | %9s %8s %8s | %9s %8s %8s | %7s %7s\n",
		"catalog", "page", "KB", "bare r/s", "p50", "p99", "page r/s", "p50", "p99", "r/s %", "p99 ×")
	for _, cat := range []struct {
		name string
		seed func() error
	}{
		{"default", func() error { return nil }},
		{fmt.Sprintf("%d", catalogSize), func() error {
			return store.ReplaceOffers(ctx, "sim", syntheticOffers(catalogSize), store.Now())
		}},
	} {
		if l.only != "" && cat.name != "default" {
			continue
		}
		if err := cat.seed(); err != nil {
			return err
		}
		for _, p := range pages {
			if l.only != "" && !strings.Contains(p.name, l.only) {
				continue
			}
			body, ctype, err := app.fetch(ctx, p.path, p.htmx)
			if err != nil {
				return err
			}
			bare, err := listen(bareEcho(body, ctype))
			if err != nil {
				return err
			}
			b := l.measure(ctx, bare.url+"/page", p.htmx)
			bare.close()
			s := l.measure(ctx, app.url+p.path, p.htmx)
			if b.err != nil || s.err != nil {
				return fmt.Errorf("%s %s: %v %v", cat.name, p.name, b.err, s.err)
			}
			fmt.Fprintf(out, "%-9s %-14s %7.1f | %9.0f %8s %8s | %9.0f %8s %8s | %6.0f%% %6.2f×\n",
				cat.name, p.name, float64(len(body))/1024, b.rps(), ms(b.p(50)), ms(b.p(99)),
				s.rps(), ms(s.p(50)), ms(s.p(99)), 100*s.rps()/b.rps(), float64(s.p(99))/float64(b.p(99)))
		}
		first, err := app.firstVisit(ctx, pages[0].path)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-9s first visit to /offers, gzipped: %s\n", cat.name, first)
	}
	if l.only == "" || strings.Contains("tenant", l.only) {
		if err := tenantFlood(ctx, out, store, app, l); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "\nr/s %: the page's throughput as a share of the bare handler's (target ≥ 60 %);")
	fmt.Fprintln(out, "p99 ×: the page's p99 over the bare handler's (target ≤ 2×). Clients ask for gzip, as browsers do;\nboth servers compress with the same middleware (web.Gzip).")
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

// syntheticOffers is a large catalog: five accelerators over 40 locations,
// so a filter on one accelerator matches a fifth of it.
func syntheticOffers(n int) []models.Offer {
	out := make([]models.Offer, 0, n)
	for i := 0; i < n; i++ {
		free := i % 70
		out = append(out, models.Offer{
			ProviderOffer: fmt.Sprintf("o%05d", i), Location: fmt.Sprintf("loc-%02d", i%40),
			LocationName: fmt.Sprintf("Location %02d", i%40), Interconnect: models.Interconnects[i%3],
			MachineKind: models.MachineKinds[i%2], Accelerator: models.Accelerators[i%len(models.Accelerators)],
			GPUsPerNode: models.GPUCounts[i%4], PerGPUHour: models.Money(1_000_000 + i*137),
			RootDiskGB: 500, DiskGBHour: 100, NodesAvailable: &free, Available: free > 0,
			BootSeconds: 240, PublicIPs: true, VCPUs: 96, MemoryGB: 1024,
		})
	}
	return out
}
