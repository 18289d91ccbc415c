/**
 * IPv4/IPv6 CIDR allow-list for ALLOWED_SOURCE_CIDRS. Parsed once with the config; a malformed
 * entry is a configuration error, never silently skipped (that would widen or narrow the list).
 */

export interface Cidr {
	version: 4 | 6;
	network: bigint;
	prefix: number;
}

function parseIPv4(text: string): bigint | null {
	const parts = text.split(".");
	if (parts.length !== 4) return null;
	let n = 0n;
	for (const p of parts) {
		if (!/^\d{1,3}$/.test(p) || Number(p) > 255 || (p.length > 1 && p.startsWith("0"))) return null;
		n = (n << 8n) | BigInt(p);
	}
	return n;
}

function parseIPv6(text: string): bigint | null {
	let s = text;
	// An embedded IPv4 tail (::ffff:1.2.3.4) becomes two hextets.
	const lastColon = s.lastIndexOf(":");
	if (s.includes(".")) {
		const v4 = parseIPv4(s.slice(lastColon + 1));
		if (v4 === null) return null;
		s = `${s.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
	}
	const halves = s.split("::");
	if (halves.length > 2) return null;
	const head = halves[0] ? halves[0].split(":") : [];
	const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
	const missing = 8 - head.length - tail.length;
	if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
	const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...tail];
	let n = 0n;
	for (const g of groups) {
		if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
		n = (n << 16n) | BigInt(Number.parseInt(g, 16));
	}
	return n;
}

export function parseIp(text: string): { version: 4 | 6; value: bigint } | null {
	const t = text.trim();
	if (t.includes(":")) {
		const v = parseIPv6(t);
		return v === null ? null : { version: 6, value: v };
	}
	const v = parseIPv4(t);
	return v === null ? null : { version: 4, value: v };
}

const bits = (version: 4 | 6) => (version === 4 ? 32 : 128);

function mask(version: 4 | 6, prefix: number): bigint {
	const width = BigInt(bits(version));
	return prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << (width - BigInt(prefix));
}

export function parseCidr(text: string): Cidr | null {
	const [addr, prefixText, extra] = text.trim().split("/");
	if (addr === undefined || extra !== undefined) return null;
	const ip = parseIp(addr);
	if (!ip) return null;
	const prefix = prefixText === undefined ? bits(ip.version) : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : -1;
	if (prefix < 0 || prefix > bits(ip.version)) return null;
	return { version: ip.version, prefix, network: ip.value & mask(ip.version, prefix) };
}

const V4_MAPPED_PREFIX = 0xffffn << 32n;

/**
 * True when `ip` falls inside any entry. An unparseable address matches nothing. An IPv4-mapped
 * IPv6 address (::ffff:a.b.c.d) is the IPv4 address it carries, so IPv4 rules match it.
 */
export function ipAllowed(ip: string, list: readonly Cidr[]): boolean {
	const parsed = parseIp(ip);
	if (!parsed) return false;
	if (parsed.version === 6 && parsed.value >> 32n === 0xffffn) {
		const v4 = { version: 4 as const, value: parsed.value - V4_MAPPED_PREFIX };
		if (matches(v4, list)) return true;
	}
	return matches(parsed, list);
}

function matches(parsed: { version: 4 | 6; value: bigint }, list: readonly Cidr[]): boolean {
	return list.some((c) => c.version === parsed.version && (parsed.value & mask(c.version, c.prefix)) === c.network);
}
