package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// Webhook endpoints (X8): an environment's, managed by owners and admins on
// /settings/webhooks and at /v1/webhooks (the key's environment). Every
// call loads the endpoint through the caller's organisation and
// environment, so another's is 404.

func (h *handler) toWebhookJSON(ctx context.Context, w models.WebhookEndpoint, withSecret bool) (api.Webhook, error) {
	n, err := h.Store.PendingWebhooks(ctx, w)
	if err != nil {
		return api.Webhook{}, err
	}
	j := api.Webhook{ID: w.ID, URL: w.URL, Description: w.Description, Types: w.TypeList(), Enabled: w.Enabled,
		PausedReason: w.PausedReason, EnvironmentID: w.EnvID, FailingSince: w.FailingSince, Pending: n, CreatedAt: w.CreatedAt.UTC()}
	if withSecret {
		j.Secret = w.Secret
	}
	if w.InOverlap(h.Store.Now()) {
		j.PreviousSecretUntil = w.PrevSecretUntil
	}
	return j, nil
}

func (h *handler) webhookOfEnv(c echo.Context) (models.WebhookEndpoint, error) {
	p := principal(c)
	return h.Store.WebhookForEnv(c.Request().Context(), p.Org.ID, p.Env.ID, c.Param("id"))
}

// apiListWebhooks is GET /v1/webhooks.
func (h *handler) apiListWebhooks(c echo.Context) error {
	p := principal(c)
	ctx := c.Request().Context()
	ws, err := h.Store.WebhooksFor(ctx, p.Org.ID, p.Env.ID)
	if err != nil {
		return err
	}
	out := api.WebhookList{Webhooks: []api.Webhook{}, EventTypes: models.PublicEventTypes}
	for _, w := range ws {
		j, err := h.toWebhookJSON(ctx, w, false)
		if err != nil {
			return err
		}
		out.Webhooks = append(out.Webhooks, j)
	}
	return c.JSON(http.StatusOK, out)
}

// apiCreateWebhook is POST /v1/webhooks: 201 with the secret, shown once.
func (h *handler) apiCreateWebhook(c echo.Context) error {
	var b api.WebhookBody
	if _, err := decodeJSON(c, &b); err != nil {
		return err
	}
	in := models.WebhookInput{Types: b.Types, Enabled: true}
	if b.URL != nil {
		in.URL = *b.URL
	}
	if b.Description != nil {
		in.Description = *b.Description
	}
	if b.Enabled != nil {
		in.Enabled = *b.Enabled
	}
	w, err := h.act(c).CreateWebhook(c.Request().Context(), in)
	if err != nil {
		return err
	}
	j, err := h.toWebhookJSON(c.Request().Context(), w, true)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, j)
}

// apiGetWebhook is GET /v1/webhooks/{id}.
func (h *handler) apiGetWebhook(c echo.Context) error {
	w, err := h.webhookOfEnv(c)
	if err != nil {
		return err
	}
	j, err := h.toWebhookJSON(c.Request().Context(), w, false)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, j)
}

// apiUpdateWebhook is PATCH /v1/webhooks/{id}: url, description, types,
// enabled (false pauses it); absent fields stay.
func (h *handler) apiUpdateWebhook(c echo.Context) error {
	w, err := h.webhookOfEnv(c)
	if err != nil {
		return err
	}
	var b api.WebhookBody
	if _, err := decodeJSON(c, &b); err != nil {
		return err
	}
	in := models.WebhookInput{URL: w.URL, Description: w.Description, Types: w.TypeList(), Enabled: w.Enabled}
	if b.URL != nil {
		in.URL = *b.URL
	}
	if b.Description != nil {
		in.Description = *b.Description
	}
	if b.Types != nil {
		in.Types = b.Types
	}
	if b.Enabled != nil {
		in.Enabled = *b.Enabled
	}
	if w, err = h.act(c).UpdateWebhook(c.Request().Context(), w.ID, in); err != nil {
		return err
	}
	j, err := h.toWebhookJSON(c.Request().Context(), w, false)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, j)
}

// apiDeleteWebhook is DELETE /v1/webhooks/{id}: 204.
func (h *handler) apiDeleteWebhook(c echo.Context) error {
	w, err := h.webhookOfEnv(c)
	if err != nil {
		return err
	}
	if _, err := h.act(c).DeleteWebhook(c.Request().Context(), w.ID); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// apiRotateWebhookSecret is POST /v1/webhooks/{id}/rotate-secret: the new
// secret, shown once; the old one signs too for the overlap.
func (h *handler) apiRotateWebhookSecret(c echo.Context) error {
	w, err := h.webhookOfEnv(c)
	if err != nil {
		return err
	}
	var b api.WebhookRotateBody
	if _, err := decodeJSON(c, &b); err != nil {
		return err
	}
	overlap := time.Duration(0)
	if b.OverlapHours != nil {
		if maxH := int64(models.WebhookMaxOverlap / time.Hour); *b.OverlapHours < 0 || int64(*b.OverlapHours) > maxH {
			return invalid(models.FieldErrors{"overlapHours": fmt.Sprintf("The overlap is 0 to %d hours.", maxH)})
		}
		overlap = time.Duration(*b.OverlapHours) * time.Hour
		if overlap == 0 {
			overlap = -1 // stop signing with the old secret at once
		}
	}
	if w, err = h.act(c).RotateWebhookSecret(c.Request().Context(), w.ID, overlap); err != nil {
		return err
	}
	j, err := h.toWebhookJSON(c.Request().Context(), w, true)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, j)
}

// apiTestWebhook is POST /v1/webhooks/{id}/test: 202, a webhook.test event queued.
func (h *handler) apiTestWebhook(c echo.Context) error {
	w, err := h.webhookOfEnv(c)
	if err != nil {
		return err
	}
	if err := h.webhookSends.allow(c, w.OrgID, w.ID); err != nil {
		return err
	}
	d, err := h.act(c).SendTestWebhook(c.Request().Context(), w.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, api.WebhookDelivery{ID: d.ID, EventID: d.EventID, Type: d.Type})
}

// apiWebhookDeliveries is GET /v1/webhooks/{id}/deliveries: the log.
func (h *handler) apiWebhookDeliveries(c echo.Context) error {
	w, err := h.webhookOfEnv(c)
	if err != nil {
		return err
	}
	log, err := h.Store.WebhookLog(c.Request().Context(), w, 200)
	if err != nil {
		return err
	}
	out := api.WebhookAttempts{Attempts: []api.WebhookAttempt{}}
	for _, a := range log {
		out.Attempts = append(out.Attempts, api.WebhookAttempt{DeliveryID: a.DeliveryID, EventID: a.EventID, Type: a.Type,
			Attempt: a.Attempt, At: a.At.UTC(), Status: a.Status, DurationMS: a.DurationMS, Answer: a.Excerpt, Error: a.Error})
	}
	return c.JSON(http.StatusOK, out)
}

func deliveryParam(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("delivery"), 10, 64)
	if err != nil || id <= 0 {
		return 0, models.ErrNotFound
	}
	return id, nil
}

// apiRedeliverWebhook is POST /v1/webhooks/{id}/deliveries/{delivery}/redeliver: 202.
func (h *handler) apiRedeliverWebhook(c echo.Context) error {
	w, err := h.webhookOfEnv(c)
	if err != nil {
		return err
	}
	if err := h.webhookSends.allow(c, w.OrgID, w.ID); err != nil {
		return err
	}
	id, err := deliveryParam(c)
	if err != nil {
		return err
	}
	d, err := h.act(c).RedeliverWebhook(c.Request().Context(), w.ID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, api.WebhookDelivery{ID: d.ID, EventID: d.EventID, Type: d.Type})
}

// ---- the Settings page ----

var webhookFormNames = map[string]string{"url": "url", "types": "types", "description": "description"}

// webhooksPage builds /settings/webhooks (and, with one endpoint's id, its
// delivery log).
func (h *handler) webhooksPage(c echo.Context, logOf string) (views.WebhooksPage, error) {
	p := principal(c)
	ctx := c.Request().Context()
	ws, err := h.Store.WebhooksFor(ctx, p.Org.ID, p.Env.ID)
	if err != nil {
		return views.WebhooksPage{}, err
	}
	pg := views.WebhooksPage{Meta: h.meta(c, "Webhooks"), Nav: settingsNav(p, "webhooks"), Env: p.Env.Name,
		Types: models.PublicEventTypes, Form: views.WebhookForm{Enabled: true}}
	for _, w := range ws {
		n, err := h.Store.PendingWebhooks(ctx, w)
		if err != nil {
			return pg, err
		}
		row := views.WebhookRow{ID: w.ID, URL: w.URL, Description: w.Description, Types: w.TypeList(), Enabled: w.Enabled,
			PausedReason: w.PausedReason, Pending: n, Created: views.FormatTime(w.CreatedAt)}
		if w.FailingSince != nil {
			row.FailingSince = views.FormatTime(*w.FailingSince)
		}
		if w.InOverlap(h.Store.Now()) {
			row.OldSecretUntil = views.FormatTime(*w.PrevSecretUntil)
		}
		if w.ID == logOf {
			log, err := h.Store.WebhookLog(ctx, w, 200)
			if err != nil {
				return pg, err
			}
			for _, a := range log {
				row.Log = append(row.Log, views.WebhookAttemptRow{DeliveryID: strconv.FormatInt(a.DeliveryID, 10), EventID: a.EventID,
					Type: a.Type, Attempt: a.Attempt, At: views.FormatTime(a.At), Status: a.Status, OK: a.OK(),
					Duration: strconv.FormatInt(a.DurationMS, 10) + " ms", Answer: a.Excerpt, Error: a.Error})
			}
			row.ShowLog = true
		}
		pg.Endpoints = append(pg.Endpoints, row)
	}
	return pg, nil
}

// listWebhooks is GET /settings/webhooks.
func (h *handler) listWebhooks(c echo.Context) error {
	pg, err := h.webhooksPage(c, "")
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.WebhooksPageView(pg))
}

// showWebhook is GET /settings/webhooks/{id}: the page with that
// endpoint's delivery log open.
func (h *handler) showWebhook(c echo.Context) error {
	w, err := h.webhookOfEnv(c)
	if err != nil {
		return err
	}
	pg, err := h.webhooksPage(c, w.ID)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.WebhooksPageView(pg))
}

// createWebhook is POST /settings/webhooks: the page with the new secret
// shown once, or 422 with the form's problems.
func (h *handler) createWebhook(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return err
	}
	in := models.WebhookInput{URL: trimForm(c, "url"), Description: trimForm(c, "description"), Types: form["types"],
		Enabled: c.FormValue("enabled") != ""}
	if c.FormValue("all_types") != "" { // "Every event type", ticked (with or without the page's script)
		in.Types = models.PublicEventTypes
	}
	w, err := h.act(c).CreateWebhook(c.Request().Context(), in)
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		pg, perr := h.webhooksPage(c, "")
		if perr != nil {
			return perr
		}
		pg.Form = views.WebhookForm{URL: in.URL, Description: in.Description, Types: in.Types, Enabled: in.Enabled}
		pg.Problems = formProblems(fe, webhookFormNames)
		return render(c, http.StatusUnprocessableEntity, views.WebhooksPageView(pg))
	}
	if err != nil {
		return err
	}
	pg, err := h.webhooksPage(c, w.ID)
	if err != nil {
		return err
	}
	pg.Secret = &views.WebhookSecret{EndpointID: w.ID, URL: w.URL, Secret: w.Secret}
	return render(c, http.StatusOK, views.WebhooksPageView(pg))
}

// rotateWebhook is POST /settings/webhooks/{id}/rotate: the new secret,
// shown once; the old one signs for 24 hours more.
func (h *handler) rotateWebhook(c echo.Context) error {
	w, err := h.webhookOfEnv(c)
	if err != nil {
		return err
	}
	if w, err = h.act(c).RotateWebhookSecret(c.Request().Context(), w.ID, 0); err != nil {
		return err
	}
	pg, err := h.webhooksPage(c, w.ID)
	if err != nil {
		return err
	}
	pg.Secret = &views.WebhookSecret{EndpointID: w.ID, URL: w.URL, Secret: w.Secret, Rotated: true,
		OldUntil: views.FormatTimePtr(w.PrevSecretUntil)}
	return render(c, http.StatusOK, views.WebhooksPageView(pg))
}

// toggleWebhook is POST /settings/webhooks/{id}/toggle: pause or enable.
func (h *handler) toggleWebhook(c echo.Context) error {
	w, err := h.webhookOfEnv(c)
	if err != nil {
		return err
	}
	in := models.WebhookInput{URL: w.URL, Description: w.Description, Types: w.TypeList(), Enabled: !w.Enabled}
	if w, err = h.act(c).UpdateWebhook(c.Request().Context(), w.ID, in); err != nil {
		return err
	}
	msg := "Endpoint " + w.URL + " paused: its events wait until you enable it."
	if w.Enabled {
		msg = "Endpoint " + w.URL + " enabled: waiting events go out in order."
	}
	_ = h.flash(c, views.FlashSuccess, msg)
	return redirect(c, "/settings/webhooks")
}

// deleteWebhook is POST /settings/webhooks/{id}/delete.
func (h *handler) deleteWebhook(c echo.Context) error {
	w, err := h.webhookOfEnv(c)
	if err != nil {
		return err
	}
	if _, err := h.act(c).DeleteWebhook(c.Request().Context(), w.ID); err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Endpoint "+w.URL+" deleted; nothing more is sent to it.")
	return redirect(c, "/settings/webhooks")
}

// testWebhook is POST /settings/webhooks/{id}/test.
func (h *handler) testWebhook(c echo.Context) error {
	w, err := h.webhookOfEnv(c)
	if err != nil {
		return err
	}
	if err := h.webhookSends.allow(c, w.OrgID, w.ID); err != nil {
		_ = h.flash(c, views.FlashError, err.(*APIError).Message)
		return redirect(c, "/settings/webhooks/"+w.ID)
	}
	d, err := h.act(c).SendTestWebhook(c.Request().Context(), w.ID)
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Test event "+d.EventID+" queued for "+w.URL+"; it shows in the log below once sent.")
	return redirect(c, "/settings/webhooks/"+w.ID)
}

// redeliverWebhook is POST /settings/webhooks/{id}/deliveries/{delivery}/redeliver.
func (h *handler) redeliverWebhook(c echo.Context) error {
	w, err := h.webhookOfEnv(c)
	if err != nil {
		return err
	}
	if err := h.webhookSends.allow(c, w.OrgID, w.ID); err != nil {
		_ = h.flash(c, views.FlashError, err.(*APIError).Message)
		return redirect(c, "/settings/webhooks/"+w.ID)
	}
	id, err := deliveryParam(c)
	if err != nil {
		return err
	}
	d, err := h.act(c).RedeliverWebhook(c.Request().Context(), w.ID, id)
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Event "+d.EventID+" queued again for "+w.URL+".")
	return redirect(c, "/settings/webhooks/"+w.ID)
}
