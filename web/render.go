package web

import (
	"bytes"
	"net/http"
	"sync"

	"github.com/a-h/templ"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// isPartial reports whether to answer with a fragment: an htmx request that
// is neither boosted nor a history restore (those replace the whole body).
func isPartial(c echo.Context) bool {
	r := c.Request()
	return r.Header.Get("HX-Request") == "true" &&
		r.Header.Get("HX-Boosted") != "true" &&
		r.Header.Get("HX-History-Restore-Request") != "true"
}

// page renders the fragment for htmx and the full page otherwise; the same
// URL answers both ways, so caches must vary on HX-Request.
func page(c echo.Context, status int, full, fragment templ.Component) error {
	c.Response().Header().Add("Vary", "HX-Request")
	if isPartial(c) {
		return render(c, status, fragment)
	}
	return render(c, status, full)
}

// render writes a component through a buffer, so a template error becomes a
// clean 500 rather than half a page with a 200. Buffers are pooled: a page
// at catalog scale is hundreds of kilobytes (O3).
func render(c echo.Context, status int, cmp templ.Component) error {
	buf := pageBuffers.Get().(*bytes.Buffer)
	defer putPageBuffer(buf)
	if err := cmp.Render(c.Request().Context(), buf); err != nil {
		return err
	}
	return c.HTMLBlob(status, buf.Bytes())
}

var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledPage keeps an exceptional page's buffer from staying in the pool.
const maxPooledPage = 4 << 20

func putPageBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledPage {
		return
	}
	b.Reset()
	pageBuffers.Put(b)
}

// meta builds the layout's data for this request.
func (h *handler) meta(c echo.Context, title string) views.Meta {
	m := views.Meta{
		Title:     title,
		Path:      c.Request().URL.Path,
		Dev:       !h.Config.Production,
		RequestID: c.Response().Header().Get(echo.HeaderXRequestID),
		Assets:    h.assetURLs,
		PollEvery: h.Config.PagePoll,
	}
	if tok, ok := c.Get(csrfContextKey).(string); ok {
		m.CSRF = tok
	}
	if u, ok := c.Get(userNavKey).(*views.UserNav); ok {
		m.User = u
		if p := principal(c); u.CanBilling && p != nil {
			m.ChargeProblem, _ = h.chargeBanner(c.Request().Context(), p.Org.ID) // a failed lookup only hides the banner
		}
		h.headerBalance(c, u)
		if p := principal(c); p != nil && p.Org.ID != "" {
			m.Stops, _ = h.stopBanners(c.Request().Context(), p.Org.ID, u.CanBilling, m.Path) // a failed lookup only hides the banner
		}
	}
	m.Flashes = h.takeFlashes(c)
	return m
}

// redirect answers a non-htmx POST with 303, and an htmx one with HX-Redirect.
func redirect(c echo.Context, to string) error {
	if c.Request().Header.Get("HX-Request") == "true" {
		c.Response().Header().Set("HX-Redirect", to)
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, to)
}

// headerBalance puts the balance in the header of owners and admins (B1):
// one query; a failure leaves it out rather than failing the page.
func (h *handler) headerBalance(c echo.Context, u *views.UserNav) {
	p := principal(c)
	if !u.CanBilling || p == nil || u.Balance != "" {
		return
	}
	if f, err := h.Store.CurrentBalance(c.Request().Context(), p.Org.ID); err == nil {
		u.Balance = models.USD(f.Balance())
		if f.Accruing > 0 {
			u.Accruing = models.USD(f.Accruing)
		}
	}
}
