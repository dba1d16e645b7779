package web

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
	sshprov "github.com/clusterdeck/clusterdeck/providers/ssh"
)

// OP1, OP2 in a browser: an operator adds a machine with a pasted key on
// /admin/machines; the ssh provider's next catalog run sells it on the
// offers page; the providers page shows the configuration (a markup from
// the environment read-only); the operator removes the machine through the
// confirmation dialog and the next catalog run stops selling it. Both pages
// fit a phone and a desktop (screenshots at 390 and 1440 px).
func TestBrowserAdminMachines(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, 2*time.Minute)
	app := newTestAppSet(t, openSQLite(t), func(s *models.Settings) {
		s.MachineKeySecret = bytes.Repeat([]byte{9}, 32)
		s.EnvMarkups = map[string]models.MarkupBP{"ssh": 1000}
	}, func(d *Deps) {
		d.Config.Providers = []string{"ssh"}
		d.Config.SSHMachinesFile = "/etc/clusterdeck/machines.yaml"
		d.Config.SSHFileMachines = []models.SSHMachine{{Name: "rack1-gpu-a", Host: "192.0.2.10", Port: 22, User: "root",
			KeyPath: "/etc/clusterdeck/id_ed25519", GPUs: 8, Accelerator: "H100_80GB", Location: "rack-1", LocationName: "Berlin office", PricePerHour: 20_000_000}}
		d.Config.ProviderSettings = map[string]ProviderSetting{"ssh": {MarkupVar: "SSH_MARKUP_PERCENT"}}
	})
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	// The ssh provider as main wires it: the file's machines and the stored ones.
	file := []sshprov.Machine{{Name: "rack1-gpu-a", Host: "192.0.2.10", KeyPath: "/etc/clusterdeck/id_ed25519", GPUs: 8, Accelerator: "H100_80GB",
		Location: "rack-1", LocationName: "Berlin office", PricePerHour: "20.00"}}
	prov, err := sshprov.New(sshprov.Config{Machines: file, AgentBinary: "/bin/true", Source: func(ctx context.Context) ([]sshprov.Machine, error) {
		rows, err := app.store.SSHMachines(ctx)
		var out []sshprov.Machine
		for _, r := range rows {
			key, _ := app.store.SSHMachineKey(r)
			out = append(out, sshprov.Machine{Name: r.Name, Host: r.Host, Port: r.Port, User: r.User, KeyPath: r.KeyPath, PrivateKey: key,
				GPUs: r.GPUs, Accelerator: r.Accelerator, Location: r.Location, LocationName: r.LocationName, PricePerHour: models.DecimalUSD(r.PricePerHour)})
		}
		return out, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	catalog := &jobs.Catalog{Store: app.store, Providers: providers.Registry{"ssh": prov}}
	runCatalog := func() {
		t.Helper()
		if err := catalog.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	runCatalog()
	acc := app.signupAccount("op@deck.example", "Deck Ops")
	if _, err := app.store.SetOperator(context.Background(), acc.user.Email, true); err != nil {
		t.Fatal(err)
	}
	eval := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return s
	}
	waitFor := func(what, js string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			ok, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(5*time.Second)))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				t.Fatalf("waiting for %s: %v", what, err)
			}
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1440, 900),
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email),
		chromedp.SetValue(`#password`, testPassword),
		chromedp.Click(`#login-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	waitFor("signed in", `location.pathname !== '/login'`)

	// The admin area links to the page.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/admin"), chromedp.WaitVisible(`[data-testid=admin-tabs]`),
		chromedp.Click(`[data-testid=admin-tabs] a[href="/admin/machines"]`)); err != nil {
		t.Fatal(err)
	}
	waitFor("the machines page", `!!document.querySelector('[data-testid=add-machine-form]')`)
	key := pastedKey(t)
	if err := chromedp.Do(ctx,
		chromedp.SetValue(`#name`, "desk-1"),
		chromedp.SetValue(`#host`, "192.0.2.20"),
		chromedp.SetValue(`#user`, "ubuntu"),
		chromedp.SetValue(`#private_key`, key),
		chromedp.SetValue(`#gpus`, "2"),
		chromedp.SetValue(`#accelerator`, "L40S"),
		chromedp.SetValue(`#location`, "office"),
		chromedp.SetValue(`#location_name`, "Munich office"),
		chromedp.SetValue(`#price`, "3.00"),
		chromedp.Click(`[data-testid=add-machine]`),
	); err != nil {
		t.Fatal(err)
	}
	waitFor("the added machine", `!!document.querySelector('[data-testid=admin-machine-row][data-machine=desk-1]')`)
	if body := eval(`document.body.innerHTML`); strings.Contains(body, strings.Split(key, "\n")[2]) {
		t.Fatal("the page shows the pasted key")
	}
	fitsTheScreen(t, ctx, srv.URL, "/admin/machines", "")

	// With a second alike machine (a cluster has two at least), the next
	// catalog run sells them, at the environment's 10 % markup.
	if _, err := app.store.As(models.Actor{OrgID: acc.org.ID, Name: acc.user.Email}).AddSSHMachine(context.Background(), models.SSHMachineInput{
		Name: "desk-2", Host: "192.0.2.21", KeyPath: "/etc/clusterdeck/id_ed25519", GPUs: "2", Accelerator: "L40S",
		Location: "office", LocationName: "Munich office", PriceHour: "3.00"}, []string{"rack1-gpu-a"}); err != nil {
		t.Fatal(err)
	}
	runCatalog()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900), chromedp.Navigate(srv.URL+"/offers?accelerator=L40S&nodes=2"), chromedp.WaitReady(`main`)); err != nil {
		t.Fatal(err)
	}
	if txt := eval(`document.querySelector('main').innerText`); !strings.Contains(txt, "Munich office") || !strings.Contains(txt, "3.30") {
		t.Errorf("the offers page does not sell the added machine at $3.30/h: %q", txt)
	}
	fitsTheScreen(t, ctx, srv.URL, "/admin/providers", "")
	if src := eval(`document.querySelector('[data-provider=ssh] [data-testid=provider-markup]').dataset.markupSource`); src != "environment" {
		t.Errorf("the ssh markup's source: %q", src)
	}

	// Remove it through the confirmation dialog.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900), chromedp.Navigate(srv.URL+"/admin/machines"), chromedp.WaitReady(`main`),
		chromedp.Click(`[data-machine=desk-1] [data-testid=remove-machine]`)); err != nil {
		t.Fatal(err)
	}
	waitFor("the confirmation", `document.getElementById('confirm-dialog').open`)
	if title := eval(`document.getElementById('confirm-title').innerText`); !strings.Contains(title, "desk-1") {
		t.Errorf("the dialog: %q", title)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid=confirm-ok]`)); err != nil {
		t.Fatal(err)
	}
	waitFor("the machine gone", `!document.querySelector('[data-machine=desk-1]') && !!document.querySelector('[data-machine=rack1-gpu-a]')`)
	runCatalog()
	offers, err := app.store.CatalogOffers(context.Background(), "L40S")
	if err != nil || len(offers) != 1 || offers[0].NodesAvailable == nil || *offers[0].NodesAvailable != 1 {
		t.Errorf("the removed machine is still sold: %+v %v", offers, err)
	}
}
