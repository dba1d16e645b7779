package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// noRedirects is a client for srv that answers redirects as they come.
func noRedirects(srv *httptest.Server) *http.Client {
	hc := *srv.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &hc
}

// postOver sends a form with the browser's cookies and CSRF token over a
// real connection to srv, without following redirects. token is fetched
// beforehand: the jar is not touched here, so browsers may post in parallel.
func (c *client) postOver(hc *http.Client, srv *httptest.Server, path, token string, form url.Values) (int, error) {
	form = cloneValues(form)
	form.Set("_csrf", token)
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, ck := range c.jar {
		req.AddCookie(ck)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

// A2, A4: two owners demoting (or removing) each other at the
// same moment, over real parallel HTTP requests, never leave the
// organisation without an owner: one change wins, the other is refused (the
// loser is no longer an owner, or no longer a member, under the
// organisation's lock).
func TestOwnersDemotingEachOtherKeepAnOwner(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		const orgs = 16
		pairs := make([]*ownerPair, orgs)
		for i := range pairs {
			a := app.signupAccount(fmt.Sprintf("a%d@example.com", i), fmt.Sprintf("Org %d", i))
			b := app.joinAccount(a, fmt.Sprintf("b%d@example.com", i), models.RoleOwner)
			p := &ownerPair{remove: i%2 == 1, org: a.org, a: a, b: b, ca: app.login(a), cb: app.login(b)}
			p.ta, p.tb = p.ca.token(), p.cb.token()
			pairs[i] = p
		}
		srv := httptest.NewServer(app.e)
		defer srv.Close()
		hc := noRedirects(srv)

		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, p := range pairs {
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				p.got[0], p.gotError[0] = p.ca.postOver(hc, srv, p.path(p.b), p.ta, url.Values{"role": {"admin"}})
			}()
			go func() {
				defer wg.Done()
				<-start
				p.got[1], p.gotError[1] = p.cb.postOver(hc, srv, p.path(p.a), p.tb, url.Values{"role": {"admin"}})
			}()
		}
		close(start)
		wg.Wait()

		ownerless := 0
		for i, p := range pairs {
			if p.gotError[0] != nil || p.gotError[1] != nil {
				t.Fatalf("org %d: %v, %v", i, p.gotError[0], p.gotError[1])
			}
			members, err := app.store.Members(context.Background(), p.org.ID)
			if err != nil {
				t.Fatal(err)
			}
			owners := 0
			for _, m := range members {
				if m.Role == models.RoleOwner {
					owners++
				}
			}
			if owners == 0 {
				ownerless++
			}
			won := 0
			for _, code := range p.got {
				if code == http.StatusSeeOther {
					won++
				} else if !p.refused(code) {
					t.Errorf("org %d (remove %v): a change answered %d", i, p.remove, code)
				}
			}
			if owners != 1 || won != 1 {
				t.Errorf("org %d (remove %v): %d owners after answers %v, want exactly one change to win", i, p.remove, owners, p.got)
			}
			if n := countActions(app.auditActions(p.org.ID), p.action()); n != won {
				t.Errorf("org %d: %d %s audit entries for %d changes", i, n, p.action(), won)
			}
		}
		if ownerless > 0 {
			t.Errorf("%d of %d organisations were left without an owner", ownerless, orgs)
		}
	})
}

// ownerPair is an organisation with two owners, each in their own browser,
// and what each one's change answered.
type ownerPair struct {
	remove   bool // remove each other rather than demote
	org      models.Org
	a, b     account
	ca, cb   *client
	ta, tb   string
	got      [2]int
	gotError [2]error
}

// path is the change aimed at other.
func (p *ownerPair) path(other account) string {
	if p.remove {
		return "/settings/team/members/" + other.user.ID + "/remove"
	}
	return "/settings/team/members/" + other.user.ID + "/role"
}

// refused reports whether code is the loser's answer: a demoted owner may
// not demote an owner (422); a removed one is no longer in the organisation
// (404), or in none at all, which ends their session (401).
func (p *ownerPair) refused(code int) bool {
	if p.remove {
		return code == http.StatusNotFound || code == http.StatusUnauthorized
	}
	return code == http.StatusUnprocessableEntity
}

func (p *ownerPair) action() string {
	if p.remove {
		return "member.remove"
	}
	return "member.role_change"
}

func countActions(actions []string, action string) int {
	n := 0
	for _, a := range actions {
		if a == action {
			n++
		}
	}
	return n
}
