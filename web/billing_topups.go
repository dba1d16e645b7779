package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// Payments is what web needs to take money in (B4); main adapts the Stripe
// provider to it. Nil Deps.Payments is test mode (B7): a top-up is credited
// at once and no money moves.
type Payments interface {
	// StartCheckout opens a Checkout Session paying top-up t and returns its
	// id and the URL where the buyer pays.
	StartCheckout(ctx context.Context, t models.TopUp, email, successURL, cancelURL string) (sessionID, payURL string, err error)
	// VerifyWebhook checks the signature over the raw body and decodes the
	// event; ErrBadSignature when it does not verify. An event of any API
	// version decodes: only WebhookFields are read.
	VerifyWebhook(payload []byte, signature string) (models.PaymentEvent, error)
	// APIVersion is the Stripe API version the payments code speaks.
	APIVersion() string
	// WebhookFields are the only fields read from an event.
	WebhookFields() []string
}

// ErrBadSignature is a webhook whose signature does not verify.
var ErrBadSignature = errors.New("web: webhook signature does not verify")

// maxWebhookBody bounds what a webhook may send.
const maxWebhookBody = 1 << 16

// topUpsOff reports that customers cannot add funds themselves: on an
// invoice-only deployment (INVOICE_ONLY=1), and in production without a
// payment provider, where test mode would credit money nobody paid (B7, B9).
func (h *handler) topUpsOff() bool {
	return h.Config.TopUpsOff || (h.Payments == nil && h.Config.Production)
}

// errTopUpsOff is the answer to a top-up when topUpsOff.
func errTopUpsOff() *APIError {
	return &APIError{Status: http.StatusConflict, Code: "top_ups_off",
		Message: "Self-service top-ups are off on this deployment: the operator adjusts balances (invoice)."}
}

// apiCreateTopUp is POST /v1/billing/top-ups: at least $5, at most the
// operator's maximum (B9). In test mode the balance is credited at once;
// with Stripe the answer carries the Checkout URL and only the verified
// webhook credits (B4). The request is audited.
func (h *handler) apiCreateTopUp(c echo.Context) error {
	ctx := c.Request().Context()
	if h.topUpsOff() {
		return errTopUpsOff()
	}
	var b api.TopUpBody
	if _, err := decodeJSON(c, &b); err != nil {
		return err
	}
	amount, err := models.ParseTypedUSD(b.Amount)
	if err != nil {
		return invalid(models.FieldErrors{"amount": err.Error()})
	}
	t, err := h.act(c).RequestTopUp(ctx, amount, h.Payments == nil)
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		return invalid(fe)
	}
	if err != nil {
		return err
	}
	out := api.TopUp{ID: t.ID, Status: t.Status, Amount: models.DecimalUSD(t.Amount), TestMode: t.TestMode}
	if h.Payments == nil {
		return c.JSON(http.StatusCreated, out)
	}
	url, err := h.checkout(c, t)
	if err != nil {
		return err
	}
	out.CheckoutURL = url
	return c.JSON(http.StatusCreated, out)
}

// stripeWebhook is POST /webhooks/stripe: the signature is verified over
// the raw body; a bad one answers 400 and changes nothing; a verified event
// the ledger does not act on answers 200 and changes nothing (B4). An event
// of another API version than ours is processed, and logged once per
// version (the operator's payments page shows it too); one that cannot be
// read is logged, never a silent 400.
func (h *handler) stripeWebhook(c echo.Context) error {
	if h.Payments == nil {
		return echo.NewHTTPError(http.StatusNotFound, "Payments run in test mode: there are no webhooks.")
	}
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxWebhookBody))
	if err != nil {
		return err
	}
	ev, err := h.Payments.VerifyWebhook(body, c.Request().Header.Get("Stripe-Signature"))
	if errors.Is(err, ErrBadSignature) {
		return echo.NewHTTPError(http.StatusBadRequest, "The webhook does not verify.")
	}
	if err != nil {
		h.Log.Error("stripe webhook: a verified event could not be read", "err", err)
		return echo.NewHTTPError(http.StatusBadRequest, "The webhook could not be read.")
	}
	if v := ev.APIVersion; v != "" && v != h.Payments.APIVersion() {
		if _, logged := h.webhookVersions.LoadOrStore(v, true); !logged {
			h.Log.Warn("stripe webhook: the endpoint sends another API version; events are processed reading only the fields used",
				"api_version", v, "expected", h.Payments.APIVersion(), "fields_used", strings.Join(h.Payments.WebhookFields(), "; "))
		}
	}
	if _, err := h.Store.ApplyPaymentEvent(c.Request().Context(), ev); err != nil {
		return err // 500: Stripe delivers it again
	}
	return c.JSON(http.StatusOK, map[string]bool{"received": true})
}
