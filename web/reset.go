package web

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// showForgotPassword is GET /forgot-password: the form asking for the
// account's email address.
func (h *handler) showForgotPassword(c echo.Context) error {
	p := views.ForgotPasswordPage{Meta: h.meta(c, "Reset your password"), Email: models.NormalizeEmail(c.QueryParam("email"))}
	return page(c, http.StatusOK, views.ForgotPasswordPageView(p), views.ForgotPasswordForm(p))
}

// forgotPassword is POST /forgot-password (A1): throttled per address and
// per network address like log-in, then a link is mailed through the
// outbox if an account has that address. The answer is the same whether or
// not one does, so the form tells nobody who has an account.
func (h *handler) forgotPassword(c echo.Context) error {
	ctx := c.Request().Context()
	p := views.ForgotPasswordPage{Meta: h.meta(c, "Reset your password"), Email: models.NormalizeEmail(c.FormValue("email")),
		Problems: map[string]string{}}
	if models.EmailProblem(p.Email) != "" {
		p.Problems["email"] = "Enter the email address you signed up with."
		return page(c, http.StatusUnprocessableEntity, views.ForgotPasswordPageView(p), views.ForgotPasswordForm(p))
	}
	ip := c.RealIP()
	block, err := h.Store.ReservePasswordReset(ctx, p.Email, ip)
	if err != nil {
		return err
	}
	if block != nil {
		wait := block.Wait(h.Store.Now())
		throttled(c, *block, h.Store.Now())
		p.Blocked = resetBlockedMessage(*block, wait)
		return page(c, http.StatusTooManyRequests, views.ForgotPasswordPageView(p), views.ForgotPasswordForm(p))
	}
	if err := h.Store.RequestPasswordReset(ctx, p.Email, ip, h.Config.BaseURL); err != nil {
		return err
	}
	h.kick(c, "mail")
	p.Sent = true
	return page(c, http.StatusOK, views.ForgotPasswordPageView(p), views.ForgotPasswordForm(p))
}

func resetBlockedMessage(b models.LoginBlock, wait time.Duration) string {
	who := "this address"
	if b.ByIP {
		who = "your network address"
	}
	mins := max(int(wait.Round(time.Minute).Minutes()), 1)
	if wait < time.Minute {
		secs := max(int(wait.Round(time.Second).Seconds()), 1)
		return fmt.Sprintf("Too many reset requests for %s. Wait %d second%s and try again.", who, secs, plural(secs))
	}
	return fmt.Sprintf("Too many reset requests for %s. Try again in %d minute%s; a link already sent still works.", who, mins, plural(mins))
}

// showResetPassword is GET /reset-password/{token}: the new-password form,
// or 404 with a way to ask again when the link is unknown, used or expired.
func (h *handler) showResetPassword(c echo.Context) error {
	_, u, err := h.Store.PasswordResetByToken(c.Request().Context(), c.Param("token"))
	if errors.Is(err, models.ErrNotFound) {
		return h.resetLinkGone(c)
	}
	if err != nil {
		return err
	}
	p := views.ResetPasswordPage{Meta: h.meta(c, "Choose a new password"), Token: c.Param("token"), Email: u.Email}
	return page(c, http.StatusOK, views.ResetPasswordPageView(p), views.ResetPasswordForm(p))
}

// resetPassword is POST /reset-password/{token}: the link is spent, the
// password set, every session logged out (A1), every API key the user
// created revoked when the form's box is ticked, and the visitor sent to
// log in with it.
func (h *handler) resetPassword(c echo.Context) error {
	ctx := c.Request().Context()
	token := c.Param("token")
	_, u, err := h.Store.PasswordResetByToken(ctx, token)
	if errors.Is(err, models.ErrNotFound) {
		return h.resetLinkGone(c)
	}
	if err != nil {
		return err
	}
	p := views.ResetPasswordPage{Meta: h.meta(c, "Choose a new password"), Token: token, Email: u.Email, Problems: map[string]string{},
		RevokeKeys: c.FormValue("revoke_api_keys") != ""}
	next, confirm := c.FormValue("new_password"), c.FormValue("confirm_password")
	if next != confirm {
		p.Problems["confirm_password"] = "The two passwords differ."
		return page(c, http.StatusUnprocessableEntity, views.ResetPasswordPageView(p), views.ResetPasswordForm(p))
	}
	_, err = h.Store.ResetPassword(ctx, token, next, c.RealIP(), p.RevokeKeys)
	var fe models.FieldErrors
	switch {
	case errors.As(err, &fe):
		p.Problems = fe
		return page(c, http.StatusUnprocessableEntity, views.ResetPasswordPageView(p), views.ResetPasswordForm(p))
	case errors.Is(err, models.ErrNotFound): // spent meanwhile by another request
		return h.resetLinkGone(c)
	case err != nil:
		return err
	}
	h.kick(c, "mail")
	// A session this browser had is over too (the version moved).
	if err := h.endSession(c, "Your password was changed and every session logged out. Log in with the new password."); err != nil {
		return err
	}
	return redirect(c, "/login")
}

// resetLinkGone answers an unknown, used or expired reset link.
func (h *handler) resetLinkGone(c echo.Context) error {
	p := views.ResetPasswordPage{Meta: h.meta(c, "Link no longer works"), Gone: true}
	return page(c, http.StatusNotFound, views.ResetPasswordPageView(p), views.ResetLinkGone())
}
