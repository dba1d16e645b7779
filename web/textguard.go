package web

import (
	"net/http"
	"strings"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// guardText keeps bytes PostgreSQL refuses (invalid UTF-8, NUL) away from
// SQL, so both databases answer bad text alike (A4): an id in the path
// answers 404 like an unknown id; a query parameter, form field or
// Idempotency-Key 422 naming it; a credential 401. JSON bodies are checked
// by decodeJSON; text from agents is cleaned by the models.
func (h *handler) guardText(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for _, v := range c.ParamValues() {
			if !models.CleanString(v) {
				return echo.ErrNotFound
			}
		}
		r := c.Request()
		if !models.CleanString(r.Header.Get("Authorization")) {
			return &APIError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "That credential is not valid."}
		}
		if !models.CleanString(r.Header.Get("Idempotency-Key")) {
			return badText("Idempotency-Key")
		}
		if name, ok := cleanValues(r.URL.Query()); !ok {
			return badText(name)
		}
		if ct := r.Header.Get(echo.HeaderContentType); strings.HasPrefix(ct, echo.MIMEApplicationForm) ||
			strings.HasPrefix(ct, echo.MIMEMultipartForm) {
			form, err := c.FormParams()
			if err != nil {
				return echo.NewHTTPError(http.StatusBadRequest, "The form could not be read.")
			}
			if name, ok := cleanValues(form); !ok {
				return badText(name)
			}
		}
		return next(c)
	}
}

// cleanValues returns the first name whose name or values are not clean.
func cleanValues(vs map[string][]string) (string, bool) {
	for k, list := range vs {
		if !models.CleanString(k) {
			return "a field name", false
		}
		for _, v := range list {
			if !models.CleanString(v) {
				return k, false
			}
		}
	}
	return "", true
}

func badText(name string) *APIError {
	return &APIError{Status: http.StatusUnprocessableEntity, Code: "validation_failed",
		Message: name + " must be UTF-8 text without NUL characters.",
		Fields:  models.FieldErrors{name: "must be UTF-8 text without NUL characters"}}
}
