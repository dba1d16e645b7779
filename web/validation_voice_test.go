package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/clusterdeck/clusterdeck/models"
)

// fieldSentence is a problem written for a person: a capital first, a full
// stop (or a question mark) last, and no internal value such as
// cluster_price or max_price.
var (
	fieldSentence = regexp.MustCompile(`^[A-Z][^\n]*[.?]$`)
	internalValue = regexp.MustCompile(`\b[a-z]+_[a-z_]+\b`)
)

// checkVoice asserts the summary at the top of a form refused with bad
// input, and that every problem on it (the summary's list and each field's
// line) is a full sentence.
func checkVoice(t *testing.T, name string, rec *httptest.ResponseRecorder) *goquery.Document {
	t.Helper()
	if rec.Code != http.StatusUnprocessableEntity {
		t.Fatalf("%s: bad input answered %d, want 422", name, rec.Code)
	}
	d := doc(t, rec)
	summary := d.Find(`[data-testid=form-problems]`)
	if summary.Length() != 1 || summary.Find(`[data-testid=form-problem]`).Length() == 0 {
		t.Errorf("%s: no summary of the problems at the top of the form", name)
	}
	d.Find(`[data-testid=form-problem], .problem`).Each(func(_ int, s *goquery.Selection) {
		msg := strings.TrimSpace(s.Text())
		if !fieldSentence.MatchString(msg) || internalValue.MatchString(msg) {
			t.Errorf("%s: %q is not a full sentence for a person", name, msg)
		}
	})
	return d
}

// summaryOrder is the fields the summary links to, top to bottom.
func summaryOrder(d *goquery.Document) []string {
	var out []string
	d.Find(`[data-testid=form-problem]`).Each(func(_ int, s *goquery.Selection) { out = append(out, s.AttrOr("href", "")) })
	return out
}

// A4: one validation voice. Each form, sent with bad input,
// answers with the summary at its top and full sentences.
func TestEveryFormSpeaksInSentences(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		app.seedOffers(testOffer("o1", "us-east", 8, 2_000_000, intp(10)))
		// The offers page: the filters.
		d := checkVoice(t, "offers", app.get("/offers?nodes=banana&max_price=lots&sort=cluster_pricey"))
		if _, open := d.Find(`[data-testid=filter-sheet]`).Attr("open"); !open {
			t.Error("offers: the Filters panel stays closed (on a phone) while a filter is wrong")
		}
		if d := doc(t, app.get("/offers")); d.Find(`[data-testid=filter-sheet][open]`).Length() != 0 {
			t.Error("offers: the Filters panel is open without a problem")
		}

		// Sign-up.
		v := app.client()
		v.get("/signup")
		d = checkVoice(t, "signup", v.post("/signup", url.Values{"name": {""}, "email": {"nobody"}, "password": {"x"}}))
		if got, want := summaryOrder(d), []string{"#name", "#email", "#password"}; !slices.Equal(got, want) {
			t.Errorf("signup: the summary lists %v, want the form's order %v", got, want)
		}

		acc := app.signupAccount("v@example.com", "Voice Labs")
		c := app.login(acc)
		bad := validQuoteForm()
		bad.Set("nodes", "1000")
		bad.Set("budget", "a lot")
		checkVoice(t, "quote request", c.post("/quote-requests", bad))
		d = checkVoice(t, "volume", c.post("/volumes", url.Values{"name": {"Not OK"}, "location": {"nowhere"}, "size_gb": {"lots"}}))
		if got, want := summaryOrder(d), []string{"#name", "#location", "#size_gb"}; !slices.Equal(got, want) {
			t.Errorf("volume: the summary lists %v, want the form's order %v", got, want)
		}
		checkVoice(t, "ssh key", c.post("/settings/ssh-keys", url.Values{"name": {"k"}, "public_key": {"not a key"}}))
		checkVoice(t, "api key", c.post("/settings/api-keys", url.Values{"name": {""}}))
		checkVoice(t, "webhook", c.post("/settings/webhooks", url.Values{"url": {"not a url"}}))
		checkVoice(t, "environment", c.post("/settings/environments", url.Values{"name": {""}}))
		checkVoice(t, "invite", c.post("/settings/team/invites", url.Values{"email": {"nobody"}, "role": {"boss"}}))
		checkVoice(t, "profile", c.post("/settings/profile", url.Values{"name": {""}, "email": {"nobody"}}))
		checkVoice(t, "password", c.post("/settings/password", url.Values{"current_password": {"wrong"}, "new_password": {"x"}}))
		d = checkVoice(t, "top-up", c.post("/billing/top-ups", url.Values{"amount": {"lots"}}))
		if v, _ := d.Find(`[data-testid=top-up-form] input[name=amount]`).Attr("value"); v != "lots" {
			t.Errorf("top-up: the typed amount is lost on refusal (%q)", v)
		}
		for _, hx := range [][]string{nil, {"HX-Request", "true"}} {
			d = checkVoice(t, "budget", c.post("/billing/budgets/"+acc.env.ID, url.Values{"amount": {"12.345"}}, hx...))
			if v, _ := d.Find(`#budget-amount-` + acc.env.ID).Attr("value"); v != "12.345" {
				t.Errorf("budget: the typed amount is lost on refusal (%q)", v)
			}
			if href, _ := d.Find(`[data-testid=form-problem]`).Attr("href"); href != "#budget-amount-"+acc.env.ID {
				t.Errorf("budget: the summary links to %q, not to the field", href)
			}
		}
		c.post("/billing/top-ups", url.Values{"amount": {"100"}}) // test mode: credited at once
		if rec := c.post("/volumes", url.Values{"name": {"ckpt"}, "location": {"us-east"}, "size_gb": {"100"}}); rec.Code != http.StatusSeeOther {
			t.Fatalf("volume: %d %s", rec.Code, rec.Body)
		}
		vs, _ := app.store.VolumesForOrg(context.Background(), acc.org.ID, acc.env.ID)
		d = checkVoice(t, "volume grow", c.post("/volumes/"+vs[0].ID+"/grow", url.Values{"size_gb": {"50"}}))
		if v, _ := d.Find(`#grow-` + vs[0].ID).Attr("value"); v != "50" {
			t.Errorf("volume grow: the typed size is lost on refusal (%q)", v)
		}
		if href, _ := d.Find(`[data-testid=form-problem]`).Attr("href"); href != "#grow-"+vs[0].ID {
			t.Errorf("volume grow: the summary links to %q, not to the field", href)
		}
		cl := launchFor(t, app, acc, "voice")
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusReady, "ready_at": app.clock.Now()})
		d = checkVoice(t, "recovery", c.post("/clusters/"+cl.ID+"/recovery", url.Values{"mode": {"sometimes"}, "maxAttempts": {"0"}, "cooldownMinutes": {"five"}}))
		if v, _ := d.Find(`#cooldownMinutes`).Attr("value"); v != "five" {
			t.Errorf("recovery: the typed minutes are lost on refusal (%q)", v)
		}
		// The summary follows the form's order, not the alphabet.
		var order []string
		d.Find(`[data-testid=form-problem]`).Each(func(_ int, s *goquery.Selection) { order = append(order, s.AttrOr("href", "")) })
		if want := []string{"#mode", "#maxAttempts", "#cooldownMinutes"}; !slices.Equal(order, want) {
			t.Errorf("recovery: the summary lists %v, want the form's order %v", order, want)
		}

		// The operator's forms.
		oc := operatorFor(t, app, app.signupAccount("op@deck.example", "Deck Ops"))
		for _, hx := range [][]string{nil, {"HX-Request", "true"}} {
			d = checkVoice(t, "org quota", oc.post("/admin/orgs/"+acc.org.ID+"/quota", url.Values{"max_machines": {"lots"}, "max_gpus": {"-1"}}, hx...))
			if v, _ := d.Find(`#max_machines-` + acc.org.ID).Attr("value"); v != "lots" {
				t.Errorf("org quota: the typed machines are lost on refusal (%q)", v)
			}
			if href, _ := d.Find(`[data-testid=form-problem]`).First().Attr("href"); href != "#max_machines-"+acc.org.ID {
				t.Errorf("org quota: the summary opens with %q, not the first field", href)
			}
		}
		for _, hx := range [][]string{nil, {"HX-Request", "true"}} {
			d = checkVoice(t, "provider markup", oc.post("/admin/providers/sim/markup", url.Values{"markup": {"-4"}}, hx...))
			if v, _ := d.Find(`#markup-sim`).Attr("value"); v != "-4" {
				t.Errorf("provider markup: the typed markup is lost on refusal (%q)", v)
			}
		}
		token := doc(t, oc.get("/admin/orgs/"+acc.org.ID+"/balance")).Find(`[data-testid=adjust-form] input[name=token]`).AttrOr("value", "")
		d = checkVoice(t, "balance adjustment", oc.post("/admin/orgs/"+acc.org.ID+"/adjustments", url.Values{"amount": {"twelve"}, "reason": {""}, "token": {token}}))
		if v, _ := d.Find(`#amount`).Attr("value"); v != "twelve" {
			t.Errorf("balance adjustment: the typed amount is lost on refusal (%q)", v)
		}
		if rec := c.post("/quote-requests", validQuoteForm()); rec.Code != http.StatusSeeOther {
			t.Fatalf("quote request: %d", rec.Code)
		}
		var qr models.QuoteRequest
		app.db.First(&qr)
		oc.post("/admin/quote-requests/"+qr.ID+"/status", url.Values{"status": {"quoted"}})
		d = checkVoice(t, "private offer", oc.post("/admin/quote-requests/"+qr.ID+"/private-offers", url.Values{"offer_id": {"nope"}, "nodes": {"1"}, "price": {"free"}, "valid_until": {"soon"}}))
		if v, _ := d.Find(`#price`).Attr("value"); v != "free" {
			t.Errorf("private offer: the typed price is lost on refusal (%q)", v)
		}
		order = nil
		d.Find(`[data-testid=form-problem]`).Each(func(_ int, s *goquery.Selection) { order = append(order, s.AttrOr("href", "")) })
		if want := []string{"#offer_id", "#nodes", "#price", "#valid_until"}; !slices.Equal(order, want) {
			t.Errorf("private offer: the summary lists %v, want the form's order %v", order, want)
		}
		l := app.client()
		l.get("/login")
		checkVoice(t, "log-in", l.post("/login", url.Values{"email": {"nobody"}, "password": {""}}))
		l.get("/forgot-password")
		checkVoice(t, "forgot password", l.post("/forgot-password", url.Values{"email": {"nobody"}}))
		l.post("/forgot-password", url.Values{"email": {acc.user.Email}})
		reset := mailedResetPath(t, app, acc.user.Email)
		l.get(reset)
		checkVoice(t, "reset password", l.post(reset, url.Values{"new_password": {"x"}, "confirm_password": {"y"}}))
	})
}
