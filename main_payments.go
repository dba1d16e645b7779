package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers/payments"
	"github.com/clusterdeck/clusterdeck/web"
)

// webPayments gives web the Stripe provider when a key is configured, and
// nil (test mode: top-ups credited at once) otherwise (B7).
func webPayments(cfg config) web.Payments {
	p := payments.New(payments.Config{SecretKey: cfg.StripeSecretKey, WebhookSecret: cfg.StripeWebhookSecret})
	if p.TestMode() {
		return nil
	}
	return stripeForWeb{p}
}

// stripeForWeb adapts payments.Provider to web.Payments.
type stripeForWeb struct{ p payments.Provider }

func (s stripeForWeb) StartCheckout(ctx context.Context, t models.TopUp, email, successURL, cancelURL string) (string, string, error) {
	co, err := s.p.CreateCheckout(ctx, payments.CheckoutParams{OrgID: t.OrgID, TopUpID: t.ID, Amount: int64(t.Amount),
		CustomerEmail: email, SuccessURL: successURL, CancelURL: cancelURL})
	return co.ID, co.URL, err
}

func (s stripeForWeb) VerifyWebhook(payload []byte, signature string) (models.PaymentEvent, error) {
	ev, err := s.p.ParseWebhook(payload, signature)
	if errors.Is(err, payments.ErrBadSignature) {
		return models.PaymentEvent{}, fmt.Errorf("%w: %v", web.ErrBadSignature, err)
	}
	if err != nil {
		return models.PaymentEvent{}, err
	}
	pi := strings.HasPrefix(ev.Type, "payment_intent.") && slices.Contains(payments.WebhookEvents, ev.Type)
	return models.PaymentEvent{ID: ev.ID, Type: ev.Type, OrgID: ev.OrgID, TopUpID: ev.TopUpID, SessionID: ev.ObjectID,
		Amount: models.Money(ev.Amount), Currency: ev.Currency, Paid: ev.Paid, APIVersion: ev.APIVersion,
		CheckoutComplete: ev.Type == payments.EventCheckoutCompleted || ev.Type == payments.EventCheckoutAsyncSucceeded,
		CheckoutFailed:   ev.Type == payments.EventCheckoutAsyncFailed,
		PaymentIntent:    pi, Failed: ev.Type == payments.EventPaymentFailed, ActionRequired: ev.Type == payments.EventPaymentRequiresAction,
		ChargeID: ev.ChargeID, PaymentIntentID: ev.PaymentIntentID, CustomerID: ev.CustomerID,
		PaymentMethodID: ev.PaymentMethodID, FailureCode: ev.FailureCode, Message: ev.FailureMessage}, nil
}

// APIVersion is the API version stripe-go speaks (web: the operator's page).
func (stripeForWeb) APIVersion() string { return payments.APIVersion }

// WebhookFields are the only fields read from an event (web: the
// operator's page, when the endpoint sends another API version).
func (stripeForWeb) WebhookFields() []string { return payments.WebhookFields }

// jobsCharger gives the charges job the Stripe provider when a key is
// configured; test mode saves no cards, so it has nothing to charge.
func jobsCharger(cfg config) jobs.Charger { return jobsChargerWith(cfg, "") }

// jobsChargerWith is jobsCharger on another API URL (tests: stripe-mock).
func jobsChargerWith(cfg config, apiURL string) jobs.Charger {
	p := payments.New(payments.Config{SecretKey: cfg.StripeSecretKey, WebhookSecret: cfg.StripeWebhookSecret, APIURL: apiURL})
	if p.TestMode() {
		return nil
	}
	return chargerForJobs{p}
}

// chargerForJobs adapts payments.Provider to jobs.Charger.
type chargerForJobs struct{ p payments.Provider }

func (s chargerForJobs) ChargeOffSession(ctx context.Context, c models.Charge) (jobs.ChargeResult, error) {
	r, err := s.p.ChargeOffSession(ctx, payments.ChargeParams{OrgID: c.OrgID, ChargeID: c.ID, Amount: int64(c.Amount),
		CustomerID: c.CustomerID, PaymentMethodID: c.PaymentMethodID, IdempotencyKey: c.IdempotencyKey()})
	if err != nil {
		return jobs.ChargeResult{}, err
	}
	status := map[string]string{payments.ChargeSucceeded: models.ChargeSucceeded, payments.ChargePending: models.ChargePending}[r.Status]
	if status == "" {
		status = models.ChargeFailed
	}
	return jobs.ChargeResult{PaymentIntentID: r.PaymentIntentID, Status: status, FailureCode: r.FailureCode, Message: r.Message}, nil
}
