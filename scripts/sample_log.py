#!/usr/bin/env python3
"""Writes samples/access.log.gz: a synthetic day of nginx-style combined log lines.

Synthetic, not captured from anywhere: about 300 ordinary clients (IPv4 and IPv6) browsing in
short sessions across one day, and one abusive client, 203.0.113.66, scraping the item API at
about ten requests a second for half an hour in the afternoon. Times are in +0100, and, as
nginx writes them (a line when the request ends, stamped with its start), a line is now and
then up to two seconds out of order.

Deterministic: a fixed seed, and gzip without a name or timestamp, so running it again gives
the same bytes.

    python3 scripts/sample_log.py [OUTPUT]
"""
import gzip
import random
import sys
from datetime import datetime, timedelta, timezone

SEED = 20261203
DAY = datetime(2026, 11, 24, tzinfo=timezone(timedelta(hours=1)))
ABUSER = "203.0.113.66"
AGENTS = [
    "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
    "okhttp/4.12.0",
]
PAGES = ["/", "/items", "/items?page=2", "/static/app.js", "/static/app.css", "/about"]


def client_ips(rng, n):
    ips = set()
    while len(ips) < n:
        if rng.random() < 0.15:
            ips.add("2001:db8:%x::%x" % (rng.randrange(1, 0xFFFF), rng.randrange(1, 0xFFFF)))
        else:
            ips.add("198.51.100.%d" % rng.randrange(1, 255) if rng.random() < 0.3
                    else "192.0.2.%d" % rng.randrange(1, 255) if rng.random() < 0.5
                    else "10.%d.%d.%d" % (rng.randrange(256), rng.randrange(256), rng.randrange(1, 255)))
    return sorted(ips)


def request(rng):
    r = rng.random()
    if r < 0.45:
        return "GET", rng.choice(PAGES)
    if r < 0.85:
        return "GET", "/api/v1/items/%d" % rng.randrange(1, 5000)
    if r < 0.95:
        return "POST", "/api/v1/cart"
    return "GET", "/api/v1/search?q=%s" % rng.choice(["lamp", "desk", "chair+oak"])


def line(ip, t, method, path, status, size, agent, referer):
    stamp = t.strftime("%d/%b/%Y:%H:%M:%S %z")
    return '%s - - [%s] "%s %s HTTP/1.1" %d %d "%s" "%s"\n' % (
        ip, stamp, method, path, status, size, referer, agent)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "samples/access.log.gz"
    rng = random.Random(SEED)
    events = []  # (written at, stamped at, text)
    for ip in client_ips(rng, 300):
        agent = rng.choice(AGENTS)
        for _ in range(rng.randrange(1, 5)):
            t = DAY + timedelta(seconds=rng.uniform(7 * 3600, 23 * 3600))
            for _ in range(rng.randrange(3, 30)):
                method, path = request(rng)
                duration = rng.expovariate(1 / 0.3)
                referer = "https://shop.example/items" if rng.random() < 0.4 else "-"
                text = line(ip, t, method, path, 200 if method == "GET" else 201,
                            rng.randrange(200, 40000), agent, referer)
                events.append((t + timedelta(seconds=min(duration, 2)), t, text))
                t += timedelta(seconds=rng.uniform(1, 25))
    t = DAY + timedelta(hours=15, minutes=12)
    end = t + timedelta(minutes=30)
    while t < end:
        text = line(ABUSER, t, "GET", "/api/v1/items/%d" % rng.randrange(1, 5000), 200,
                    rng.randrange(200, 4000), "python-requests/2.32", "-")
        events.append((t, t, text))
        t += timedelta(seconds=rng.expovariate(10))
    events.sort(key=lambda e: e[0])
    with open(out, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
            for _, _, text in events:
                gz.write(text.encode())
    print("%s: %d lines" % (out, len(events)))


if __name__ == "__main__":
    main()
