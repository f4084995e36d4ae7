/**
 * WebKitGTK reports the process locale as `navigator.language`; under `LANG=C` (CI, Xvfb,
 * minimal containers) that is "C", which `Intl` refuses, and uPlot formats numbers with it at
 * load time. Imported first, this swaps an invalid language for "en-US".
 */
export function usableLanguage(language: string | undefined): string {
  try {
    if (language && Intl.getCanonicalLocales(language).length > 0) return language;
  } catch {
    // fall through
  }
  return "en-US";
}

const language = usableLanguage(navigator.language);
if (language !== navigator.language) {
  Object.defineProperty(navigator, "language", { get: () => language, configurable: true });
  Object.defineProperty(navigator, "languages", { get: () => [language], configurable: true });
}
