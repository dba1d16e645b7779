package web

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/models"
)

// B3, L7 in a real browser at 390 and 1440 px: the page reads typed
// amounts exactly as the server does (the table of TestTypedAmountsServer
// through parseAmount), so the top-up dialog asks "Add $5,000.00?" about
// "5,000" and the server credits $5,000.00; an amount the server refuses
// ("5,00", over the largest top-up) is never restated in a question: the
// form goes and the refusal sits beside the field, crediting nothing. The
// question is a money one, not a danger: no red button.
func TestBrowserTypedAmountsMirrorTheServer(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowser(t)
	app := newTestApp(t, openSQLite(t))
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	bg := context.Background()
	owner := app.signupAccount("amounts@example.com", "Amounts")
	b := browserSession{t: t, ctx: ctx, srv: srv}
	b.login(owner)
	balance := func() models.Money {
		m, err := app.store.Balance(bg, owner.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	const dialogOpen = `document.getElementById('confirm-dialog').open`
	type answer struct {
		Cents *int64  `json:"cents"`
		Error *string `json:"error"`
	}
	var credited models.Money
	for i, w := range screenWidths {
		b.do(chromedp.EmulateViewport(w, 900), chromedp.Navigate(srv.URL+"/billing"), chromedp.WaitVisible(`[data-testid=top-up-form] #amount`))
		if i == 0 { // the mirror does not depend on the width
			ins, _ := json.Marshal(func() (out []string) {
				for _, c := range typedAmounts {
					out = append(out, c.in)
				}
				return out
			}())
			var got []answer
			if err := json.Unmarshal([]byte(b.str(`JSON.stringify(`+string(ins)+`.map(s => window.clusterdeckParseAmount(s)))`)), &got); err != nil || len(got) != len(typedAmounts) {
				t.Fatalf("the page's reading: %v (%d answers)", err, len(got))
			}
			for k, c := range typedAmounts {
				switch g := got[k]; {
				case c.problem == "" && (g.Cents == nil || *g.Cents != c.cents || g.Error != nil):
					t.Errorf("page reads %q as %+v, the server as %d cents", c.in, g, c.cents)
				case c.problem != "" && (g.Error == nil || *g.Error != c.problem || g.Cents != nil):
					t.Errorf("page reads %q as %+v, the server refuses it: %q", c.in, g, c.problem)
				}
			}
		}
		submit := func(typed string) {
			t.Helper()
			b.do(chromedp.Navigate(srv.URL+"/billing"), chromedp.WaitVisible(`[data-testid=top-up-form] #amount`),
				chromedp.SetValue(`[data-testid=top-up-form] #amount`, typed), chromedp.Click(`[data-testid=add-funds]`))
		}
		// Refused amounts: no question, the server's refusal beside the field.
		for typed, want := range map[string]string{"5,00": models.AmountProblemCommas, "60,000": "The largest top-up is $50,000.00."} {
			submit(typed)
			b.wait("the refusal of "+typed, `!!document.querySelector('[data-testid=problem-amount]') || `+dialogOpen)
			if b.str(`String(`+dialogOpen+`)`) == "true" {
				t.Fatalf("at %d px %q was restated in a question: %q", w, typed, b.str(`document.getElementById('confirm-title').textContent`))
			}
			if got := b.str(`document.querySelector('[data-testid=problem-amount]').textContent`); got != want {
				t.Errorf("at %d px %q: the field says %q, want %q", w, typed, got, want)
			}
		}
		if balance() != credited {
			t.Fatalf("at %d px refused amounts moved the balance to %d", w, balance())
		}
		// "$5,000" asks about $5,000.00, in a money question, and credits it.
		submit("$5,000")
		b.wait("the question", dialogOpen)
		if got := b.str(`document.getElementById('confirm-title').textContent`); got != "Add $5,000.00 to the balance?" {
			t.Errorf("at %d px the question reads %q", w, got)
		}
		if cls := b.str(`document.querySelector('[data-testid=confirm-ok]').className`); cls != "btn-primary" {
			t.Errorf("at %d px adding funds confirms with %q, want the primary button, not a danger one", w, cls)
		}
		if kind := b.str(`document.getElementById('confirm-dialog').dataset.consequence`); kind != "change" {
			t.Errorf("at %d px the dialog is styled %q", w, kind)
		}
		saveScreenshot(t, ctx, "top-up-question", w)
		b.do(chromedp.Click(`[data-testid=confirm-ok]`))
		credited += 5000 * models.Micro
		b.wait("credited", `location.pathname === '/billing' && !`+dialogOpen+` && !document.querySelector('[data-testid=problem-amount]') && document.querySelector('[data-testid=flash]') !== null`)
		if got := balance(); got != credited {
			t.Fatalf("at %d px the balance is %d after confirming $5,000.00, want %d", w, got, credited)
		}
		if h := b.str(`document.querySelector('[data-testid=header-balance]').innerText`); !strings.Contains(h, models.USD(credited)) {
			t.Errorf("at %d px the header shows %q, want %s", w, h, models.USD(credited))
		}
	}
}
