/** A vendor's own words, as the errors and logs quote them: one printable line, short, never holding the secret. */
const MAX_VENDOR_MESSAGE_CHARS = 200;

export function vendorMessageLine(text: string, secret: string): string {
  const redacted = secret === '' ? text : text.split(secret).join('[REDACTED]');
  return redacted.replace(/[^\x20-\x7e]+/g, ' ').slice(0, MAX_VENDOR_MESSAGE_CHARS);
}
