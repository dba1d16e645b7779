package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// parseRecharge reads the two amounts of an auto-recharge setting; a
// blank threshold is $0.
func parseRecharge(threshold, amount string) (models.Money, models.Money, models.FieldErrors) {
	fe := models.FieldErrors{}
	th, err := models.Money(0), error(nil)
	if threshold != "" {
		if th, err = models.ParseTypedUSD(threshold); err != nil {
			fe["threshold"] = err.Error()
		}
	}
	am, err := models.ParseTypedUSD(amount)
	if err != nil {
		fe["amount"] = err.Error()
	}
	if len(fe) > 0 {
		return 0, 0, fe
	}
	return th, am, nil
}

// autoRechargeForm is the organisation's saved setting as the form shows it.
func (h *handler) autoRechargeForm(ctx context.Context, orgID, csrf string) (views.AutoRechargeForm, error) {
	a, err := h.Store.AutoRechargeFor(ctx, orgID)
	if err != nil {
		return views.AutoRechargeForm{}, err
	}
	f := views.AutoRechargeForm{CSRF: csrf, Enabled: a.Enabled, CardSaved: a.HasCard(), TestMode: h.Payments == nil,
		Max: models.USD(h.Store.TopUpLimit())}
	if a.Amount > 0 {
		f.Threshold, f.Amount = models.DecimalUSD(a.Threshold), models.DecimalUSD(a.Amount)
	}
	f.Paused, err = h.chargeBanner(ctx, orgID)
	return f, err
}

// chargeBanner is the failed charge that paused auto-recharge, if any: one
// indexed query, made for owners and admins on every page (B4).
func (h *handler) chargeBanner(ctx context.Context, orgID string) (*views.ChargeBanner, error) {
	ch, err := h.Store.ChargeProblem(ctx, orgID)
	if err != nil || ch == nil {
		return nil, err
	}
	headline, text := views.ChargeFailedText(ch.Amount, ch.FailureCode, ch.AuthenticationRequired())
	return &views.ChargeBanner{Headline: headline, Text: text}, nil
}

// saveAutoRecharge is POST /billing/auto-recharge (owners and admins): an
// htmx post gets the form back (422 with the problems beside the fields);
// a plain one is redirected to the billing page with a flash.
func (h *handler) saveAutoRecharge(c echo.Context) error {
	ctx := c.Request().Context()
	csrf, _ := c.Get(csrfContextKey).(string)
	f := views.AutoRechargeForm{CSRF: csrf, Enabled: c.FormValue("enabled") == "on",
		Threshold: trimForm(c, "threshold"), Amount: trimForm(c, "amount"), TestMode: h.Payments == nil,
		Max: models.USD(h.Store.TopUpLimit())}
	th, am, fe := parseRecharge(f.Threshold, f.Amount)
	var err error
	if fe == nil {
		_, err = h.act(c).SetAutoRecharge(ctx, f.Enabled, th, am)
		errors.As(err, &fe)
	}
	if fe != nil {
		if !isPartial(c) {
			_ = h.flash(c, views.FlashError, "Auto-recharge was not saved: "+fe.Error())
			return redirect(c, "/billing#auto-recharge")
		}
		saved, err := h.autoRechargeForm(ctx, principal(c).Org.ID, f.CSRF)
		if err != nil {
			return err
		}
		f.CardSaved, f.Paused, f.Problems = saved.CardSaved, saved.Paused, fe
		return render(c, http.StatusUnprocessableEntity, views.AutoRechargeSettings(f))
	}
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Auto-recharge saved.")
	return redirect(c, "/billing")
}

// apiAutoRecharge is GET /v1/billing/auto-recharge (owners and admins).
func (h *handler) apiAutoRecharge(c echo.Context) error {
	ctx := c.Request().Context()
	a, err := h.Store.AutoRechargeFor(ctx, principal(c).Org.ID)
	if err != nil {
		return err
	}
	return h.autoRechargeJSON(c, a)
}

// apiPutAutoRecharge is PUT /v1/billing/auto-recharge: the whole setting,
// audited; enabling needs a card saved by a top-up (B4).
func (h *handler) apiPutAutoRecharge(c echo.Context) error {
	var b api.AutoRechargeBody
	if _, err := decodeJSON(c, &b); err != nil {
		return err
	}
	th, am, fe := parseRecharge(b.Threshold, b.Amount)
	if fe != nil {
		return invalid(fe)
	}
	a, err := h.act(c).SetAutoRecharge(c.Request().Context(), b.Enabled, th, am)
	if errors.As(err, &fe) {
		return invalid(fe)
	}
	if err != nil {
		return err
	}
	return h.autoRechargeJSON(c, a)
}

func (h *handler) autoRechargeJSON(c echo.Context, a models.AutoRecharge) error {
	out := api.AutoRecharge{Enabled: a.Enabled, Threshold: models.DecimalUSD(a.Threshold), Amount: models.DecimalUSD(a.Amount),
		CardSaved: a.HasCard()}
	ch, err := h.Store.ChargeProblem(c.Request().Context(), a.OrgID)
	if err != nil {
		return err
	}
	if ch != nil {
		out.Paused = &api.FailedCharge{ID: ch.ID, Amount: models.DecimalUSD(ch.Amount), FailureCode: ch.FailureCode,
			Message: ch.Message, At: ch.CreatedAt}
	}
	return c.JSON(http.StatusOK, out)
}
