package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/models"
)

func volumeCount(t testing.TB, app *testApp) int64 {
	t.Helper()
	var n int64
	if err := app.db.Model(&models.Volume{}).Where("deleted_at IS NULL").Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// V1–V3, A3, A4 over the API: create with field problems (nothing stored),
// list and get in the key's environment only, grow, delete; while a
// cluster is attached grow and delete answer 409 volume_attached and
// nothing changes; after terminate both work.
func TestAPIVolumes(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("v@example.com", "Volume Labs")
		tok := apiKeyFor(t, app, acc)
		other := app.signupAccount("o@example.com", "Other Labs")
		otherTok := apiKeyFor(t, app, other)
		launchFor(t, app, acc, "train") // seeds us-east and a deposit

		for _, bad := range []struct{ body, field string }{
			{`{"name":"Bad Name","location":"us-east","sizeGb":10}`, "name"},
			{`{"name":"data","location":"mars","sizeGb":10}`, "location"},
			{`{"name":"data","location":"us-east","sizeGb":0}`, "sizeGb"},
			{`{"name":"data","location":"us-east","sizeGb":100001}`, "sizeGb"},
		} {
			code, body := apiJSON(t, app, "POST", "/v1/volumes", tok, bad.body)
			fields, _ := body["error"].(map[string]any)["fields"].(map[string]any)
			if code != http.StatusUnprocessableEntity || fields[bad.field] == nil {
				t.Errorf("%s: %d %v", bad.body, code, body)
			}
		}
		if code, _ := apiJSON(t, app, "POST", "/v1/volumes", tok, `{"name":"data","size":10}`); code != http.StatusUnprocessableEntity {
			t.Errorf("unknown field: %d", code)
		}
		if n := volumeCount(t, app); n != 0 {
			t.Fatalf("bad bodies stored %d volumes", n)
		}

		code, v := apiJSON(t, app, "POST", "/v1/volumes", tok, `{"name":"ckpt","location":"us-east","sizeGb":200}`)
		if code != http.StatusCreated || v["sizeGb"].(float64) != 200 || v["clusterId"] != nil ||
			v["usdPerHour"] != models.DecimalUSD(200*models.VolumeRate("us-east")) {
			t.Fatalf("create: %d %v", code, v)
		}
		id := v["id"].(string)
		code, list := apiJSON(t, app, "GET", "/v1/volumes", tok, "")
		if vs := list["volumes"].([]any); code != 200 || len(vs) != 1 || vs[0].(map[string]any)["id"] != id {
			t.Errorf("list: %d %v", code, list)
		}
		if code, list := apiJSON(t, app, "GET", "/v1/volumes", otherTok, ""); code != 200 || len(list["volumes"].([]any)) != 0 {
			t.Errorf("another org's list: %d %v", code, list)
		}
		for _, r := range []struct{ method, path, body string }{
			{"GET", "/v1/volumes/" + id, ""}, {"POST", "/v1/volumes/" + id + "/grow", `{"sizeGb":300}`}, {"DELETE", "/v1/volumes/" + id, ""},
		} {
			if code, body := apiJSON(t, app, r.method, r.path, otherTok, r.body); code != http.StatusNotFound {
				t.Errorf("another org %s %s: %d %v", r.method, r.path, code, body)
			}
		}

		// Attach it to a second cluster through a launch with volumeId.
		code, q := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", tok, `{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"volumeId":"`+id+`"}`)
		if code != http.StatusCreated || q["volumeId"] != id || q["location"] != "us-east" || q["storage"].(map[string]any)["persistentGb"].(float64) != 200 {
			t.Fatalf("quote with volumeId: %d %v", code, q)
		}
		code, launched := apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, `{"quoteId":"`+q["id"].(string)+`","name":"mounts"}`)
		if code != http.StatusCreated {
			t.Fatalf("launch with the volume: %d %v", code, launched)
		}
		cid := launched["id"].(string)
		if vol, _ := launched["volume"].(map[string]any); vol == nil || vol["id"] != id {
			t.Errorf("the cluster does not show its volume: %v", launched["volume"])
		}
		code, got := apiJSON(t, app, "GET", "/v1/volumes/"+id, tok, "")
		if code != 200 || got["clusterId"] != cid {
			t.Errorf("get: %d %v", code, got)
		}
		for _, r := range []struct{ method, path, body string }{
			{"POST", "/v1/volumes/" + id + "/grow", `{"sizeGb":300}`}, {"DELETE", "/v1/volumes/" + id, ""},
		} {
			code, body := apiJSON(t, app, r.method, r.path, tok, r.body)
			e, _ := body["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if code != http.StatusConflict || e["code"] != "volume_attached" || e["clusterId"] != cid || !strings.Contains(msg, "mounts") {
				t.Errorf("%s %s while attached: %d %v", r.method, r.path, code, body)
			}
		}
		code, body := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", tok, `{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"volumeId":"`+id+`"}`)
		if code != http.StatusConflict || errCode(body) != "volume_attached" {
			t.Errorf("a second cluster on the attached volume: %d %v", code, body)
		}
		if got, _ := app.store.VolumeForOrg(ctx, acc.org.ID, id); got.SizeGB != 200 {
			t.Errorf("refusals changed the volume: %+v", got)
		}

		if _, err := app.store.MarkTerminated(ctx, cid); err != nil {
			t.Fatal(err)
		}
		if code, g := apiJSON(t, app, "POST", "/v1/volumes/"+id+"/grow", tok, `{"sizeGb":150}`); code != http.StatusUnprocessableEntity {
			t.Errorf("shrink: %d %v", code, g)
		}
		if code, g := apiJSON(t, app, "POST", "/v1/volumes/"+id+"/grow", tok, `{"sizeGb":300}`); code != 200 || g["sizeGb"].(float64) != 300 {
			t.Errorf("grow after terminate: %d %v", code, g)
		}
		if code, _ := apiJSON(t, app, "DELETE", "/v1/volumes/"+id, tok, ""); code != http.StatusNoContent {
			t.Errorf("delete: %d", code)
		}
		if code, _ := apiJSON(t, app, "GET", "/v1/volumes/"+id, tok, ""); code != http.StatusNotFound {
			t.Errorf("get after delete: %d", code)
		}
	})
}

// V5 over the API: a volume on a community offer is refused before the
// quote, with the reason, and no quote is written.
func TestAPICommunityVolumeRefused(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("c@example.com", "Community Labs")
		tok := apiKeyFor(t, app, acc)
		home := testOffer("home", "us-east", 8, 900_000, intp(4))
		home.Community = true
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)), home)
		code, body := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", tok,
			`{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"offerId":"sim:home","include_community":true,"storage":{"persistentGb":100}}`)
		fields, _ := body["error"].(map[string]any)["fields"].(map[string]any)
		if code != http.StatusUnprocessableEntity || fields["storage.persistentGb"] != models.CommunityVolumeReason {
			t.Errorf("community + persistentGb: %d %v", code, body)
		}
		var n int64
		app.db.Model(&models.Quote{}).Count(&n)
		if n != 0 {
			t.Errorf("the refusal wrote %d quotes", n)
		}
	})
}

// The Volumes page (V1–V3, X11): the create form keeps what was typed with
// a problem beside each bad field and stores nothing; a created volume is
// listed with its accrued cost and, once its cluster ended, as detached and
// still billing; grow and delete through the forms.
func TestVolumesPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("p@example.com", "Page Labs")
		launchFor(t, app, acc, "train")
		c := app.login(acc)
		d := doc(t, c.get("/volumes"))
		if d.Find(`nav a[href="/volumes"]`).Length() == 0 {
			t.Error("no Volumes entry in the navigation")
		}
		if d.Find(`#location option[value="us-east"]`).Length() != 1 {
			t.Errorf("the location select lacks us-east")
		}
		rec := c.post("/volumes", url.Values{"name": {"Not OK"}, "location": {"us-east"}, "size_gb": {"lots"}})
		if rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("bad form: %d", rec.Code)
		}
		d = doc(t, rec)
		if d.Find("#problem-name").Length() != 1 || d.Find("#problem-size_gb").Length() != 1 ||
			d.Find(`#name`).AttrOr("value", "") != "Not OK" || d.Find(`#location option[selected]`).AttrOr("value", "") != "us-east" {
			t.Errorf("the form lost the input or the problems:\n%.2000s", rec.Body)
		}
		if n := volumeCount(t, app); n != 0 {
			t.Fatalf("a bad form stored %d volumes", n)
		}
		rec = c.post("/volumes", url.Values{"name": {"ckpt"}, "location": {"us-east"}, "size_gb": {"100"}})
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
		vs, _ := app.store.VolumesForOrg(context.Background(), acc.org.ID, acc.env.ID)
		if len(vs) != 1 {
			t.Fatalf("volumes %+v", vs)
		}
		app.clock.Advance(2 * time.Hour)
		d = doc(t, c.get("/volumes"))
		row := d.Find("#volume-" + vs[0].ID)
		want := models.USD(100 * models.VolumeRate("us-east") * 2)
		if !strings.Contains(row.Text(), "Accrued "+want) || !strings.Contains(row.Text(), "detached, still billing") {
			t.Errorf("row %q, want accrued %s and detached", row.Text(), want)
		}
		if q, label := confirmOf(t, d, "/volumes/"+vs[0].ID+"/delete"); !strings.Contains(q, "ckpt") || label != "Delete volume" {
			t.Errorf("delete asks %q / %q, want the volume's name in the page's dialog", q, label)
		}
		if d.Find(`[hx-confirm]`).Length() != 0 {
			t.Error("a browser confirm() is used beside the dialog")
		}
		if rec := c.post("/volumes/"+vs[0].ID+"/grow", url.Values{"size_gb": {"50"}}); rec.Code != http.StatusUnprocessableEntity ||
			!strings.Contains(rec.Body.String(), "only grows") {
			t.Errorf("shrink through the page: %d", rec.Code)
		}
		if rec := c.post("/volumes/"+vs[0].ID+"/grow", url.Values{"size_gb": {"400"}}); rec.Code != http.StatusSeeOther {
			t.Errorf("grow: %d", rec.Code)
		}
		if rec := c.post("/volumes/"+vs[0].ID+"/delete", nil); rec.Code != http.StatusSeeOther {
			t.Errorf("delete: %d", rec.Code)
		}
		if n := volumeCount(t, app); n != 0 {
			t.Errorf("%d volumes after delete", n)
		}
	})
}

// B2, B3, V3, X11: a volume bills from creation through its cluster's
// terminate, on its own "Volume — NAME" line of the billing page (detached
// and still billing, with its accrued cost) and in GET /v1/billing/usage,
// whose total includes it; after delete it bills no more.
func TestVolumeBillingLines(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("b@example.com", "Billing Labs")
		tok := apiKeyFor(t, app, acc)
		launchFor(t, app, acc, "train")
		code, v := apiJSON(t, app, "POST", "/v1/volumes", tok, `{"name":"ckpt","location":"us-east","sizeGb":1000}`)
		if code != http.StatusCreated {
			t.Fatalf("create: %d %v", code, v)
		}
		id := v["id"].(string)
		code, q := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", tok, `{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"volumeId":"`+id+`"}`)
		if code != http.StatusCreated {
			t.Fatal(code, q)
		}
		code, cl := apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, `{"quoteId":"`+q["id"].(string)+`","name":"mounted"}`)
		if code != http.StatusCreated {
			t.Fatal(code, cl)
		}
		app.clock.Advance(90 * time.Minute)
		if _, err := app.store.MarkTerminated(ctx, cl["id"].(string)); err != nil {
			t.Fatal(err)
		}
		app.clock.Advance(90 * time.Minute) // 3 h since creation, half of it detached
		if _, err := app.store.MeterUsage(ctx); err != nil {
			t.Fatal(err)
		}
		rate := 1000 * models.VolumeRate("us-east")
		want := rate * 3 // 180 minutes, 3 hours written
		c := app.login(acc)
		d := doc(t, c.get("/billing"))
		line := d.Find("#volume-usage-" + id)
		if !strings.Contains(line.Text(), "Volume — ckpt") || !strings.Contains(line.Text(), models.USD(want)) ||
			line.AttrOr("data-detached", "") != "true" || !strings.Contains(line.Text(), "detached, still billing") {
			t.Errorf("billing line %q, want %s detached", line.Text(), models.USD(want))
		}
		code, u := apiJSON(t, app, "GET", "/v1/billing/usage", tok, "")
		vols, _ := u["volumes"].([]any)
		if code != 200 || len(vols) != 1 {
			t.Fatalf("usage: %d %v", code, u)
		}
		vu := vols[0].(map[string]any)
		if vu["volumeId"] != id || vu["amount"] != models.DecimalUSD(want) || vu["clusterId"] != "" || vu["minutes"].(float64) != 180 {
			t.Errorf("volume usage %v, want %s", vu, models.DecimalUSD(want))
		}
		var clusters models.Money
		for _, cu := range u["clusters"].([]any) {
			amt, _ := models.ParseUSD(cu.(map[string]any)["amount"].(string))
			clusters += amt
		}
		if total, _ := models.ParseUSD(u["total"].(string)); total != clusters+want {
			t.Errorf("total %v, want clusters %d + volume %d", u["total"], clusters, want)
		}

		if csv := c.get("/billing/usage.csv").Body.String(); !strings.Contains(csv, "Volume — ckpt,,"+strings.TrimPrefix(models.USD(rate), "$")+",3.000000,180,"+strings.TrimPrefix(models.USD(want), "$")+",USD,") {
			t.Errorf("the usage CSV lacks the volume's row:\n%s", csv)
		}
		if code, _ := apiJSON(t, app, "DELETE", "/v1/volumes/"+id, tok, ""); code != http.StatusNoContent {
			t.Fatalf("delete: %d", code)
		}
		app.clock.Advance(5 * time.Hour)
		if _, err := app.store.MeterUsage(ctx); err != nil {
			t.Fatal(err)
		}
		_, u = apiJSON(t, app, "GET", "/v1/billing/usage", tok, "")
		vu = u["volumes"].([]any)[0].(map[string]any)
		if vu["amount"] != models.DecimalUSD(want) || vu["deleted"] != true {
			t.Errorf("after delete the volume billed on: %v", vu)
		}
	})
}

// V2 in the dashboard: the picker pinned by a volume shows only offers in
// its location (cheaper ones elsewhere are left out) and says so; Launch
// carries the volume, whose quote is in its location and mounts it; the
// launch attaches it. V5, O5: a community offer's launch page repeats the
// warning and offers no volume, and asking for one is refused with the reason.
func TestVolumePinsPickerAndLaunchPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("pin@example.com", "Pin Labs")
		launchFor(t, app, acc, "first") // deposit, us-east offer
		home := testOffer("home", "eu-west", 8, 900_000, intp(4))
		home.Community = true
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)), testOffer("cheap", "eu-west", 8, 1_000_000, intp(20)), home)
		v, err := app.store.As(models.Actor{OrgID: acc.org.ID, EnvID: acc.env.ID, UserID: acc.user.ID, Role: models.RoleOwner, Name: acc.user.Email}).
			CreateVolume(ctx, models.VolumeInput{Name: "ckpt", Location: "us-east", SizeGB: 300})
		if err != nil {
			t.Fatal(err)
		}
		c := app.login(acc)
		d := doc(t, c.get("/offers?accelerator=H100_80GB&nodes=2&include_community=true&volume="+v.ID))
		if pin := d.Find("[data-testid=volume-pin]").Text(); !strings.Contains(pin, "us-east") || !strings.Contains(pin, "ckpt") {
			t.Errorf("the picker does not say it is pinned: %q", pin)
		}
		if d.Find(`#offer-sim\:cheap`).Length() != 0 || d.Find(`#offer-sim\:home`).Length() != 0 {
			t.Error("the pinned picker shows offers outside the volume's location (or community hosts)")
		}
		link := d.Find(`#offer-sim\:h100x8 [data-testid=launch-link]`).AttrOr("href", "")
		if !strings.Contains(link, "volume="+v.ID) {
			t.Fatalf("Launch does not carry the volume: %q", link)
		}
		if rec := c.get("/offers?volume=vol_nope"); rec.Code != http.StatusNotFound {
			t.Errorf("an unknown volume pins: %d", rec.Code)
		}

		rec := c.get(link)
		if rec.Code != http.StatusOK {
			t.Fatalf("launch page: %d %s", rec.Code, rec.Body)
		}
		d = doc(t, rec)
		if cur := d.Find("[data-testid=storage-current]").Text(); !strings.Contains(cur, "mounts volume ckpt") {
			t.Errorf("storage panel: %q", cur)
		}
		if !strings.Contains(d.Find("[data-testid=line-items]").Text(), "300 GB") {
			t.Errorf("the quote does not price the volume: %q", d.Find("[data-testid=line-items]").Text())
		}
		rec = c.post("/clusters", url.Values{"quote_id": {d.Find("input[name=quote_id]").AttrOr("value", "")},
			"form_token": {d.Find("input[name=form_token]").AttrOr("value", "")}, "name": {"mounted"}, "software": {"none"}})
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("launch: %d %s", rec.Code, rec.Body)
		}
		got, _ := app.store.VolumeForOrg(ctx, acc.org.ID, v.ID)
		cl, err := app.store.ClusterForOrg(ctx, acc.org.ID, got.ClusterID)
		if err != nil || cl.Name != "mounted" || cl.VolumeID != v.ID || cl.Location != "us-east" {
			t.Errorf("the launch did not attach the volume: %+v %v", cl, err)
		}
		d = doc(t, c.get("/clusters/"+cl.ID))
		paths := d.Find("[data-testid=storage] [data-testid=mount-path]").Map(func(_ int, s *goquery.Selection) string { return s.Text() })
		if strings.Join(paths, " ") != "/shared /shared/volume" || !strings.Contains(d.Find("[data-testid=storage]").Text(), "on every node") ||
			!strings.Contains(d.Find("[data-testid=storage-volume]").Text(), "ckpt") {
			t.Errorf("the cluster page's storage: %v %q", paths, d.Find("[data-testid=storage]").Text())
		}
		d = doc(t, c.get("/volumes"))
		if row := d.Find("#volume-" + v.ID); row.AttrOr("data-attached", "") != "true" || row.Find("[data-testid=volume-delete]").Length() != 0 {
			t.Errorf("the attached volume's row: %q", row.Text())
		}

		// B6: stopped, the cluster still holds the volume, which bills on.
		now := app.clock.Now()
		if err := app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusStopped,
			"ready_at": now, "stopped_at": now, "stopped_from": "ready", "stop_reason": "balance"}).Error; err != nil {
			t.Fatal(err)
		}
		d = doc(t, c.get("/clusters/"+cl.ID))
		if note := d.Find("[data-testid=storage-volume]").Text(); !strings.Contains(note, "kept while this cluster is stopped") ||
			!strings.Contains(note, "bills meanwhile") {
			t.Errorf("the stopped cluster's volume note: %q", note)
		}
		d = doc(t, c.get("/volumes"))
		if row := d.Find("#volume-" + v.ID); row.AttrOr("data-attached", "") != "true" || row.Find("[data-testid=volume-delete]").Length() != 0 {
			t.Errorf("the stopped cluster's volume's row: %q", row.Text())
		}

		// Community: the warning again, and no volume.
		d = doc(t, c.get("/clusters/new?offer=sim:home&nodes=2"))
		if w := d.Find("[data-testid=community-warning]").Text(); !strings.Contains(w, "Keep secrets off") {
			t.Errorf("no community warning on the launch page: %q", w)
		}
		if d.Find("[data-testid=storage-form]").Length() != 0 || !strings.Contains(d.Find("[data-testid=storage-refused]").Text(), "Community hosts take no persistent volume") {
			t.Errorf("the community launch page offers a volume")
		}
		rec = c.get("/clusters/new?offer=sim:home&nodes=2&persistent_gb=100")
		if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "Community hosts take no persistent volume") {
			t.Errorf("community + persistent_gb: %d", rec.Code)
		}
	})
}

// V4: each node's agent reports its mounts step with its heartbeats; the
// cluster page's storage panel shows, per node, waiting, mounting since,
// mounted at, or failed with the reason, and each end is an event. A
// report the server cannot show is refused.
func TestMountsStateShown(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("m@example.com", "Mounts")
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "dep", "t")
		q, _ := app.store.CreateQuote(ctx, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		cl, _, err := app.store.LaunchCluster(ctx, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID,
			Workload: models.Workload{Name: "mnt", Software: "none"}})
		if err != nil {
			t.Fatal(err)
		}
		nodes, _ := app.store.NodesFor(ctx, cl.ID)
		c := app.login(acc)
		states := func() map[string]string {
			t.Helper()
			out := map[string]string{}
			doc(t, c.get("/clusters/"+cl.ID)).Find("[data-testid=storage] [data-testid=mount-state]").Each(func(_ int, s *goquery.Selection) {
				out[s.AttrOr("data-node", "")] = s.AttrOr("data-state", "") + " " + s.Text()
			})
			return out
		}
		if st := states(); !strings.HasPrefix(st["node-0"], "waiting ") || !strings.HasPrefix(st["node-1"], "waiting ") {
			t.Errorf("before ready: %v", st)
		}
		cl = makeJoined(t, app, cl, true)
		beat := func(rank int, body string) int {
			t.Helper()
			code, _ := apiJSON(t, app, "POST", "/v1/agent/heartbeat", models.AgentToken(cl, nodes[rank]), body)
			return code
		}
		if code := beat(1, `{"mounts":{"state":"mounting","startedAt":"2026-12-01T10:00:00Z"}}`); code != 200 {
			t.Fatalf("mounting: %d", code)
		}
		if code := beat(0, `{"mounts":{"state":"mounted","startedAt":"2026-12-01T10:00:00Z","endedAt":"2026-12-01T10:00:04Z"}}`); code != 200 {
			t.Fatalf("mounted: %d", code)
		}
		st := states()
		if !strings.HasPrefix(st["node-1"], "mounting ") || !strings.Contains(st["node-1"], "mounting since") ||
			!strings.HasPrefix(st["node-0"], "mounted ") || !strings.Contains(st["node-0"], "mounted at") {
			t.Errorf("mounting and mounted: %v", st)
		}
		failed := `{"mounts":{"state":"failed","startedAt":"2026-12-01T10:00:00Z","endedAt":"2026-12-01T10:05:00Z","error":"the mounts step exited with code 32: mount.nfs: Connection timed out"}}`
		if code := beat(1, failed); code != 200 {
			t.Fatalf("failed: %d", code)
		}
		if st := states(); !strings.HasPrefix(st["node-1"], "failed ") || !strings.Contains(st["node-1"], "mount.nfs: Connection timed out") {
			t.Errorf("failed: %v", st)
		}
		beat(1, `{"mounts":{"state":"mounting","startedAt":"2026-12-01T10:00:00Z"}}`) // a late heartbeat changes nothing
		if st := states(); !strings.HasPrefix(st["node-1"], "failed ") {
			t.Errorf("a late mounting report overwrote the end: %v", st)
		}
		// The API says the same per node (V4).
		code, body := apiJSON(t, app, "GET", "/v1/gpu/clusters/"+cl.ID, apiKeyFor(t, app, acc), "")
		if code != http.StatusOK {
			t.Fatalf("GET cluster: %d %v", code, body)
		}
		apiMounts := map[string]string{}
		for _, n := range body["nodes"].([]any) {
			n := n.(map[string]any)
			if m, ok := n["mounts"].(map[string]any); ok {
				apiMounts[n["name"].(string)] = fmt.Sprint(m["state"], " ", m["endedAt"] != nil, " ", m["error"])
			}
		}
		if apiMounts["node-0"] != "mounted true <nil>" || !strings.HasPrefix(apiMounts["node-1"], "failed true the mounts step exited with code 32") {
			t.Errorf("API mounts = %v", apiMounts)
		}
		evs, _ := app.store.EventsFor(ctx, cl.ID)
		var msgs []string
		for _, e := range evs {
			msgs = append(msgs, e.Kind+": "+e.Message)
		}
		all := strings.Join(msgs, "\n")
		if !strings.Contains(all, "info: node-0 mounted its folders.") || !strings.Contains(all, "error: node-1 could not mount its folders: the mounts step exited with code 32") {
			t.Errorf("events:\n%s", all)
		}
		for _, bad := range []string{`{"mounts":{"state":"stuck","startedAt":"2026-12-01T10:00:00Z"}}`, `{"mounts":{"state":"failed","startedAt":"2026-12-01T10:00:00Z","endedAt":"2026-12-01T10:00:01Z"}}`} {
			if code := beat(0, bad); code != http.StatusBadRequest {
				t.Errorf("%s: %d, want 400", bad, code)
			}
		}
	})
}

// The launch page's storage line is a sentence ("This
// launch no persistent volume").
func TestLaunchStorageSentence(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
	acc := app.signupAccount("ada@example.com", "Ada Labs")
	app.store.Deposit(t.Context(), acc.org.ID, 1000*models.Micro, "dep", "test")
	d := doc(t, app.login(acc).get("/clusters/new?offer=sim:h100x8&nodes=2"))
	if got := d.Find(`[data-testid=storage-current]`).Text(); !strings.HasPrefix(got, "This launch takes no persistent volume:") {
		t.Errorf("storage line %q", got)
	}
}
