package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/clusterdeck/clusterdeck/models/domain"
	"github.com/labstack/echo/v4"
)

// Development-only routes (never registered in production): the fake clock,
// running a job's tick now, the simulated cloud's fault script and the mail
// outbox. They are for demos and black-box tests on the developer's own
// machine, so they answer loopback clients only: a development server that
// is reachable from elsewhere does not hand out every organisation's mail.

// localOnly refuses /dev/… requests that do not come from this machine
// (isLocal: a request forwarded by a proxy on this host does not), that
// name another host than a loopback one (DNS rebinding: a page of
// evil.example resolving to 127.0.0.1), or that a browser marks as sent from
// another site (A3, OP5).
func localOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if !isLocal(r) {
			return echo.NewHTTPError(http.StatusForbidden, "Development routes answer only on this machine (loopback).")
		}
		if !loopbackHost(r.Host) {
			return echo.NewHTTPError(http.StatusForbidden, "Development routes answer only to http://localhost or http://127.0.0.1.")
		}
		site := r.Header.Get("Sec-Fetch-Site")
		origin, err := url.Parse(r.Header.Get("Origin"))
		if (site != "" && site != "same-origin" && site != "none") || err != nil ||
			(r.Header.Get("Origin") != "" && !loopbackHost(origin.Host)) {
			return echo.NewHTTPError(http.StatusForbidden, "Development routes refuse requests from other sites.")
		}
		return next(c)
	}
}

// loopbackHost reports whether a Host header (with or without a port) names
// this machine: localhost, 127.0.0.0/8 or ::1.
func loopbackHost(host string) bool { return domain.LoopbackHost(host) }

// ClockFollower is the scheduler whose per-minute jobs follow the fake
// clock: RunDue runs the ones a move made due and names them.
type ClockFollower interface {
	RunDue(ctx context.Context) ([]string, error)
}

// devClock is GET /dev/clock.
func (h *handler) devClock(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"now": h.Store.Now(), "fake": h.FakeClock != nil})
}

// devAdvanceClock is POST /dev/clock with minutes=N.
func (h *handler) devAdvanceClock(c echo.Context) error {
	if h.FakeClock == nil {
		return &APIError{Status: http.StatusConflict, Code: "real_clock", Message: "Start with CLUSTERDECK_FAKE_CLOCK=1 to move time."}
	}
	minutes, err := strconv.Atoi(c.FormValue("minutes"))
	if err != nil || minutes < 0 || minutes > 7*24*60 {
		return &APIError{Status: http.StatusUnprocessableEntity, Code: "validation_failed",
			Message: "minutes must be a whole number from 0 to 10080.", Fields: map[string]string{"minutes": "0 to 10080"}}
	}
	now := h.FakeClock.Advance(time.Duration(minutes) * time.Minute)
	// The jobs that follow the clock (billing, budgets, the GPU watch, the
	// catalog…) run at once when the move made them due, so a stall or idle
	// rule is judged on the moved time, not at the wall's next minute.
	if f, ok := h.Jobs.(ClockFollower); ok {
		ran, err := f.RunDue(c.Request().Context())
		if err != nil {
			h.Log.Warn("jobs due after moving the clock", "error", err)
		}
		if ran == nil {
			ran = []string{}
		}
		return c.JSON(http.StatusOK, map[string]any{"now": now, "fake": true, "ran": ran})
	}
	// The catalog's prices age with the clock: refresh them at once, so a
	// newcomer's offers do not vanish as stale after a move (O6).
	if h.Jobs != nil && minutes > 0 {
		if err := h.Jobs.RunNow(c.Request().Context(), "catalog"); err != nil {
			h.Log.Warn("catalog refresh after moving the clock", "error", err)
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"now": now, "fake": true})
}

// devRunJob is POST /dev/jobs/{name}/run.
func (h *handler) devRunJob(c echo.Context) error {
	if h.Jobs == nil {
		return &APIError{Status: http.StatusConflict, Code: "no_jobs", Message: "Jobs are not running in this process."}
	}
	name := c.Param("name")
	err := h.Jobs.RunNow(c.Request().Context(), name)
	var known bool
	for _, n := range h.Jobs.Names() {
		known = known || n == name
	}
	if !known {
		return &APIError{Status: http.StatusNotFound, Code: "not_found", Message: "No job is called " + strconv.Quote(name) + "."}
	}
	if err != nil {
		return c.JSON(http.StatusOK, map[string]any{"job": name, "ok": false, "error": err.Error()})
	}
	return c.JSON(http.StatusOK, map[string]any{"job": name, "ok": true})
}

// devSimFaults is POST /dev/sim/faults with a JSON fault script.
func (h *handler) devSimFaults(c echo.Context) error {
	if h.Sim == nil {
		return &APIError{Status: http.StatusConflict, Code: "no_sim", Message: "The simulated cloud is not enabled."}
	}
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	n, err := h.Sim.InjectFaultsJSON(body)
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) {
			return ae
		}
		return &APIError{Status: http.StatusUnprocessableEntity, Code: "validation_failed", Message: err.Error()}
	}
	return c.JSON(http.StatusOK, map[string]any{"injected": n})
}
