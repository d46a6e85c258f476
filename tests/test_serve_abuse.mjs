// test_serve_abuse.mjs - clients that misbehave, against `andrea serve`.
//
// usage: node test_serve_abuse.mjs HOST PORT HEADER_TIMEOUT_S
//   1. a client that sends its request one byte a second: the server closes the
//      connection (its header watchdog) long before the request is complete, while a
//      normal request on another connection is answered meanwhile;
//   2. 1,000 connections opened and dropped: 400 closed at once, 300 after half a
//      request line, 300 after a whole header block of a POST whose body never comes;
//   3. afterwards /health still answers.
// Prints one line per check; exits 1 when one fails.
import net from "node:net";

const [host, portArg, hdrArg] = process.argv.slice(2);
const port = Number(portArg), headerTimeout = Number(hdrArg);
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); else console.log("ok: " + what); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function health() {
    const r = await fetch(`http://${host}:${port}/health`);
    return r.status === 200 && (await r.json()).status === "ok";
}

// 1. one byte a second, for up to 3 x the header timeout
async function slowClient() {
    const req = "GET /health HTTP/1.1\r\nHost: x\r\nX-Padding: " + "a".repeat(200) + "\r\n\r\n";
    const sock = net.connect(port, host);
    let closed = false, got = "";
    sock.on("data", (d) => { got += d; });
    sock.on("close", () => { closed = true; });
    sock.on("error", () => { closed = true; });
    await new Promise((r) => sock.once("connect", r));
    let sent = 0;
    const limit = 3 * headerTimeout;
    for (; sent < limit && !closed; sent++) {
        sock.write(req[sent]);
        await sleep(1000);
        if (sent === 1) check(await health(), "a normal request is answered while the slow client is connected");
    }
    sock.destroy();
    check(closed && sent < limit && got === "",
          `slow client (1 byte/s) cut off after ${sent} of ${req.length} bytes (header timeout ${headerTimeout} s)`);
}

// 2. open and drop
async function churn() {
    let errors = 0;
    const one = (kind) => new Promise((resolve) => {
        const s = net.connect(port, host);
        s.on("error", () => { errors++; resolve(); });
        s.on("connect", () => {
            if (kind === 1) s.write("GET /heal");
            if (kind === 2) s.write("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{\"pro");
            setTimeout(() => { s.destroy(); resolve(); }, kind ? 20 : 0);
        });
    });
    for (let batch = 0; batch < 10; batch++) {
        const ps = [];
        for (let i = 0; i < 100; i++) ps.push(one(i < 40 ? 0 : i < 70 ? 1 : 2));
        await Promise.all(ps);
    }
    return errors;
}

await slowClient();
const errors = await churn();
await sleep(500);
check(await health(), `1000 connections opened and dropped (${errors} refused by the connection limit): /health answers`);
if (failures.length) {
    for (const f of failures) console.error("FAIL: " + f);
    process.exit(1);
}
