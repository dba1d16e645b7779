package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"
	"github.com/stripe/stripe-go/v76/webhook"
)

// Stripe is the Provider on Stripe's API (stripe-go pins API version
// 2023-10-16; the webhook endpoint must be created with the same version).
type Stripe struct {
	api           *client.API
	webhookSecret string
}

// NewStripe builds the Stripe provider.
func NewStripe(cfg Config) *Stripe {
	bc := &stripe.BackendConfig{LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull}}
	if cfg.APIURL != "" {
		bc.URL = stripe.String(cfg.APIURL)
	}
	backends := &stripe.Backends{
		API:     stripe.GetBackendWithConfig(stripe.APIBackend, bc),
		Connect: stripe.GetBackendWithConfig(stripe.ConnectBackend, bc),
		Uploads: stripe.GetBackendWithConfig(stripe.UploadsBackend, bc),
	}
	return &Stripe{api: client.New(cfg.SecretKey, backends), webhookSecret: cfg.WebhookSecret}
}

// TestMode implements Provider.
func (*Stripe) TestMode() bool { return false }

// CreateCheckout implements Provider: a Checkout Session in payment mode
// that saves the card for off-session use, named by the top-up in its
// metadata and idempotent on it.
func (s *Stripe) CreateCheckout(ctx context.Context, p CheckoutParams) (Checkout, error) {
	if err := checkTopUp(p); err != nil {
		return Checkout{}, err
	}
	amount, _ := cents(p.Amount)
	meta := map[string]string{"org_id": p.OrgID, "top_up_id": p.TopUpID}
	params := &stripe.CheckoutSessionParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModePayment)),
		SuccessURL:        stripe.String(p.SuccessURL),
		CancelURL:         stripe.String(p.CancelURL),
		ClientReferenceID: stripe.String(p.TopUpID),
		Metadata:          meta,
		LineItems: []*stripe.CheckoutSessionLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionLineItemPriceDataParams{
				Currency:    stripe.String(string(stripe.CurrencyUSD)),
				UnitAmount:  stripe.Int64(amount),
				ProductData: &stripe.CheckoutSessionLineItemPriceDataProductDataParams{Name: stripe.String("Clusterdeck credit")},
			},
		}},
		PaymentIntentData: &stripe.CheckoutSessionPaymentIntentDataParams{
			SetupFutureUsage: stripe.String("off_session"),
			Metadata:         meta,
		},
	}
	if p.CustomerID != "" {
		params.Customer = stripe.String(p.CustomerID)
	} else {
		params.CustomerCreation = stripe.String(string(stripe.CheckoutSessionCustomerCreationAlways))
		if p.CustomerEmail != "" {
			params.CustomerEmail = stripe.String(p.CustomerEmail)
		}
	}
	params.Context = ctx
	params.SetIdempotencyKey("top-up:" + p.TopUpID)
	cs, err := s.api.CheckoutSessions.New(params)
	if err != nil {
		return Checkout{}, fmt.Errorf("payments: checkout for %s: %w", p.TopUpID, err)
	}
	return Checkout{ID: cs.ID, URL: cs.URL}, nil
}

// ParseWebhook implements Provider with stripe-go's webhook package over
// the raw body; the event's API version must be stripe-go's.
func (s *Stripe) ParseWebhook(payload []byte, signature string) (Event, error) {
	e, err := webhook.ConstructEvent(payload, signature, s.webhookSecret)
	if err != nil {
		if errors.Is(err, webhook.ErrInvalidHeader) || errors.Is(err, webhook.ErrNoValidSignature) ||
			errors.Is(err, webhook.ErrNotSigned) || errors.Is(err, webhook.ErrTooOld) {
			return Event{}, fmt.Errorf("%w: %v", ErrBadSignature, err)
		}
		return Event{}, fmt.Errorf("payments: webhook: %w", err)
	}
	out := Event{ID: e.ID, Type: string(e.Type)}
	if e.Data == nil {
		return out, nil
	}
	switch out.Type {
	case EventCheckoutCompleted:
		var cs stripe.CheckoutSession
		if err := json.Unmarshal(e.Data.Raw, &cs); err != nil {
			return Event{}, fmt.Errorf("payments: webhook %s: %w", e.ID, err)
		}
		out.ObjectID, out.OrgID, out.TopUpID = cs.ID, cs.Metadata["org_id"], cs.Metadata["top_up_id"]
		out.Amount = cs.AmountTotal * microPerCent
		out.Paid = cs.PaymentStatus == stripe.CheckoutSessionPaymentStatusPaid
		if cs.Customer != nil {
			out.CustomerID = cs.Customer.ID
		}
		if cs.PaymentIntent != nil {
			out.PaymentIntentID = cs.PaymentIntent.ID
		}
	case EventPaymentSucceeded, EventPaymentFailed:
		var pi stripe.PaymentIntent
		if err := json.Unmarshal(e.Data.Raw, &pi); err != nil {
			return Event{}, fmt.Errorf("payments: webhook %s: %w", e.ID, err)
		}
		out.ObjectID, out.PaymentIntentID = pi.ID, pi.ID
		out.OrgID, out.TopUpID, out.ChargeID = pi.Metadata["org_id"], pi.Metadata["top_up_id"], pi.Metadata["charge_id"]
		out.Amount = pi.AmountReceived * microPerCent
		out.Paid = pi.Status == stripe.PaymentIntentStatusSucceeded
		if pi.LastPaymentError != nil {
			out.FailureCode, out.FailureMessage = string(pi.LastPaymentError.Code), pi.LastPaymentError.Msg
		}
		// Unexpanded, the API sends customer and payment_method as ids;
		// stripe-go decodes each into an object holding only its ID.
		if pi.Customer != nil {
			out.CustomerID = pi.Customer.ID
		}
		if pi.PaymentMethod != nil {
			out.PaymentMethodID = pi.PaymentMethod.ID
		}
	}
	return out, nil
}

// ChargeOffSession implements Provider: a confirmed off-session
// PaymentIntent on the saved card, idempotent on p.IdempotencyKey.
func (s *Stripe) ChargeOffSession(ctx context.Context, p ChargeParams) (Charge, error) {
	amount, err := cents(p.Amount)
	if err != nil {
		return Charge{}, err
	}
	if p.IdempotencyKey == "" || p.CustomerID == "" || p.PaymentMethodID == "" {
		return Charge{}, errors.New("payments: an off-session charge needs a key, a customer and a saved card")
	}
	params := &stripe.PaymentIntentParams{
		Amount:        stripe.Int64(amount),
		Currency:      stripe.String(string(stripe.CurrencyUSD)),
		Customer:      stripe.String(p.CustomerID),
		PaymentMethod: stripe.String(p.PaymentMethodID),
		Confirm:       stripe.Bool(true),
		OffSession:    stripe.Bool(true),
		Description:   stripe.String("Clusterdeck auto-recharge"),
		Metadata:      map[string]string{"org_id": p.OrgID, "charge_id": p.ChargeID},
	}
	params.Context = ctx
	params.SetIdempotencyKey(p.IdempotencyKey)
	pi, err := s.api.PaymentIntents.New(params)
	var se *stripe.Error
	if errors.As(err, &se) && se.Type == stripe.ErrorTypeCard {
		c := Charge{Status: ChargeFailed, FailureCode: string(se.Code), DeclineCode: string(se.DeclineCode), Message: se.Msg,
			AuthenticationRequired: se.Code == stripe.ErrorCodeAuthenticationRequired}
		if se.PaymentIntent != nil {
			c.PaymentIntentID = se.PaymentIntent.ID
		}
		return c, nil
	}
	if err != nil {
		return Charge{}, fmt.Errorf("payments: charge %s: %w", p.ChargeID, err)
	}
	if pi.Status == stripe.PaymentIntentStatusRequiresAction {
		return Charge{PaymentIntentID: pi.ID, Status: ChargeFailed, FailureCode: string(stripe.ErrorCodeAuthenticationRequired),
			AuthenticationRequired: true}, nil
	}
	return Charge{PaymentIntentID: pi.ID, Status: chargeStatus(pi.Status)}, nil
}

func chargeStatus(s stripe.PaymentIntentStatus) string {
	switch s {
	case stripe.PaymentIntentStatusSucceeded:
		return ChargeSucceeded
	case stripe.PaymentIntentStatusProcessing:
		return ChargePending
	}
	return ChargeFailed // requires_payment_method, canceled…
}
