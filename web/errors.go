package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// APIError is an error with the API's body shape:
// {"error":{"code":"no_capacity","message":"…", …extra}}.
type APIError struct {
	Status  int
	Code    string
	Message string
	Fields  map[string]string // field-level problems (422)
	Extra   map[string]any    // e.g. reason and shape for no_capacity
	// Href and Action are the way forward a page links beside the
	// message ("Add $34.94" to the top-up form); the API leaves them out.
	Href, Action string
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

// invalid is the 422 for field problems.
func invalid(fe models.FieldErrors) *APIError {
	return &APIError{Status: http.StatusUnprocessableEntity, Code: "validation_failed",
		Message: "Some fields are not valid.", Fields: fe}
}

// classify maps any error onto a status, an API code and a customer-safe message.
func classify(err error) *APIError {
	var ae *APIError
	var fe models.FieldErrors
	var he *echo.HTTPError
	var fb *models.ForbiddenError
	var va *models.VolumeAttachedError
	var br *models.BudgetReachedError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &va):
		return volumeAttached(va)
	case errors.As(err, &br): // B5: resuming while the environment's budget is reached
		return budgetReached(br, 0)
	case errors.As(err, &fe):
		return invalid(fe)
	case errors.As(err, &fb):
		return &APIError{Status: http.StatusForbidden, Code: "forbidden", Message: fb.Message}
	case errors.Is(err, models.ErrNotFound):
		return &APIError{Status: http.StatusNotFound, Code: "not_found", Message: "We could not find that."}
	case errors.Is(err, models.ErrConflict):
		return &APIError{Status: http.StatusConflict, Code: "conflict", Message: "That changed while you were looking at it. Reload and try again."}
	case errors.As(err, &he):
		msg, _ := he.Message.(string)
		if he.Code == http.StatusNotFound || msg == "" || he.Code >= 500 {
			msg = defaultMessage(he.Code)
		}
		return &APIError{Status: he.Code, Code: codeFor(he.Code), Message: msg}
	default:
		return &APIError{Status: http.StatusInternalServerError, Code: "internal", Message: defaultMessage(500)}
	}
}

func codeFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "bad_request"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusTooManyRequests:
		return "too_many_requests"
	case http.StatusUnprocessableEntity:
		return "validation_failed"
	}
	if status >= 500 {
		return "internal"
	}
	return "error"
}

func defaultMessage(status int) string {
	switch status {
	case http.StatusNotFound:
		return "We could not find that."
	case http.StatusUnauthorized:
		return "Log in to continue."
	case http.StatusForbidden:
		return "You do not have access to that."
	case http.StatusMethodNotAllowed:
		return "That action is not available here."
	}
	if status >= 500 {
		return "Something failed on our side. It has been logged."
	}
	return "That could not be done."
}

// errorHandler is the only place errors become responses: JSON for the API,
// a flash for htmx (retargeted to #flash), a full page otherwise. It logs
// once, with the request id; internals never reach the customer.
func (h *handler) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ae := classify(err)
	rid := c.Response().Header().Get(echo.HeaderXRequestID)
	if ae.Status >= 500 {
		h.Log.Error("request failed", "request_id", rid, "method", c.Request().Method,
			"path", c.Request().URL.Path, "status", ae.Status, "error", err)
	}
	var werr error
	switch {
	case strings.HasPrefix(c.Request().URL.Path, "/v1/") || c.Request().URL.Path == "/mcp":
		werr = writeAPIError(c, ae)
	case c.Request().Header.Get("HX-Request") == "true":
		c.Response().Header().Set("HX-Retarget", "#flash")
		c.Response().Header().Set("HX-Reswap", "innerHTML")
		werr = render(c, ae.Status, views.FlashList([]views.Flash{refusalFlash(ae)}, rid))
	case c.Request().Method == http.MethodHead:
		werr = c.NoContent(ae.Status)
	case keepInPlace(c, ae):
		// A4: a form refused on a page goes back to that page
		// with the refusal and its way forward on top, never to an error
		// page left on the form's URL.
		werr = h.flash(c, views.FlashError, encodeFlash(refusalFlash(ae)))
		if werr == nil {
			werr = c.Redirect(http.StatusSeeOther, cameFrom(c))
		}
	default:
		title := pageTitle(ae.Status)
		werr = render(c, ae.Status, views.ErrorPage(h.meta(c, title), title, ae.Message, backLink(c)))
	}
	if werr != nil {
		h.Log.Error("error response failed", "request_id", rid, "error", werr)
	}
}

// pageTitle is an error page's title in words: never the HTTP status's
// own words ("409 Conflict"), which say nothing to a customer (A4).
func pageTitle(status int) string {
	switch status {
	case http.StatusNotFound:
		return "We could not find that"
	case http.StatusForbidden:
		return "Not allowed"
	case http.StatusUnauthorized:
		return "Log in to continue"
	case http.StatusUnprocessableEntity, http.StatusBadRequest:
		return "Check what you entered"
	case http.StatusPaymentRequired:
		return "Add funds first"
	case http.StatusTooManyRequests:
		return "Too many tries"
	case http.StatusMethodNotAllowed:
		return "Not available here"
	}
	if status >= 500 {
		return "Something failed on our side"
	}
	return "That could not be done"
}

func writeAPIError(c echo.Context, ae *APIError) error {
	body := api.ErrorBody{Code: ae.Code, Message: ae.Message, Fields: ae.Fields, Extra: map[string]json.RawMessage{}}
	for k, v := range ae.Extra {
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		body.Extra[k] = raw
	}
	return c.JSON(ae.Status, api.Error{Error: body})
}
