/** Tailwind CSS v3. Class names built in Go strings live in views/*.go, so
 * those files are scanned too. */
module.exports = {
  content: ["./views/**/*.templ", "./views/**/*.go"],
  darkMode: "media",
  theme: { extend: {} },
  plugins: [],
};
