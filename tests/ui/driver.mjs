// The browser end of tests/ui/browser.py: one headless Chromium (Debian's, driven by playwright-core; Playwright's
// own browser downloads are not reachable here), one page at a time, commands as JSON lines on stdin, one JSON
// reply line each on stdout: {"op": "goto", "url": ...} -> {"ok": true, "value": ...} or {"ok": false, "error": ...}.
// Python keeps the logic (waiting, polling, asserting); this file only translates commands to Playwright calls.
// Every request the page makes to anything but 127.0.0.1 is refused and kept in `offsite`: the dashboard must work
// on a closed network (no CDN), and a test can ask which requests were refused.
import readline from 'node:readline';
import { chromium } from 'playwright-core';

const executablePath = process.env.ROCKMQ_CHROMIUM || '/usr/bin/chromium';
const timeout = Number(process.env.ROCKMQ_UI_TIMEOUT_MS || 10000);
const browser = await chromium.launch({ executablePath, headless: true });

let context = null;
let page = null;
let offsite = [];
let errors = [];

const loopback = (url) => {
    const u = new URL(url);
    return ['http:', 'https:', 'ws:', 'wss:'].includes(u.protocol) ? u.hostname === '127.0.0.1' : u.protocol === 'data:';
};

async function fresh(width, height) {
    if (context) await context.close();
    context = await browser.newContext({ viewport: { width, height }, ignoreHTTPSErrors: true });
    context.setDefaultTimeout(timeout);
    offsite = [];
    errors = [];
    await context.route('**/*', (route) => {
        const url = route.request().url();
        if (loopback(url)) return route.continue();
        offsite.push(url);
        return route.abort('blockedbyclient');
    });
    page = await context.newPage();
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
}

async function current() {
    if (!page) await fresh(1280, 800);
    return page;
}

// Each op: (page, command) -> a JSON value.
const ops = {
    fresh: async (_, c) => { await fresh(c.width, c.height); return null; },
    goto: async (p, c) => {
        const r = await p.goto(c.url, { waitUntil: 'load' });
        return { status: r ? r.status() : 0, url: p.url() };
    },
    url: async (p) => p.url(),
    title: async (p) => p.title(),
    wait: async (p, c) => { await p.locator(c.selector).first().waitFor({ state: c.state, timeout: c.timeout }); return null; },
    count: async (p, c) => p.locator(c.selector).count(),
    text: async (p, c) => (await p.locator(c.selector).first().innerText()).trim(),
    texts: async (p, c) => (await p.locator(c.selector).allInnerTexts()).map((t) => t.trim()),
    rows: async (p, c) => p.locator(`${c.selector} tr`).evaluateAll(
        (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.innerText.trim())).filter((r) => r.length)),
    attr: async (p, c) => p.locator(c.selector).first().getAttribute(c.name),
    attrs: async (p, c) => p.locator(c.selector).evaluateAll((els, name) => els.map((e) => e.getAttribute(name)), c.name),
    click: async (p, c) => {
        const loaded = c.navigates ? p.waitForEvent('load') : null;
        await p.locator(c.selector).first().click();
        if (loaded) await loaded;
        return p.url();
    },
    fill: async (p, c) => { await p.locator(c.selector).first().fill(c.value); return null; },
    remove: async (p, c) => p.locator(c.selector).evaluateAll((els) => { els.forEach((e) => e.remove()); return els.length; }),
    press: async (p, c) => {
        const loaded = c.navigates ? p.waitForEvent('load') : null;
        await p.locator(c.selector).first().press(c.key);
        if (loaded) await loaded;
        return p.url();
    },
    screenshot: async (p, c) => { await p.screenshot({ path: c.path, fullPage: true }); return c.path; },
    offsite: async () => offsite,
    errors: async () => errors,
};

const reply = (r) => process.stdout.write(JSON.stringify(r) + '\n');
reply({ ok: true, value: browser.version() });  // ready: the browser started

for await (const line of readline.createInterface({ input: process.stdin })) {
    const c = JSON.parse(line);
    try {
        const op = ops[c.op];
        if (!op) throw new Error(`unknown op ${c.op}`);
        if (c.url && !loopback(c.url)) throw new Error(`only 127.0.0.1 URLs: ${c.url}`);
        reply({ ok: true, value: await op(c.op === 'fresh' ? null : await current(), c) });
    } catch (e) {
        reply({ ok: false, error: String(e.message || e).split('\n')[0] });
    }
}
await browser.close();
