/**
 * Wrappers around the real D1 and Queue bindings: they count calls and inject faults, and
 * forward everything else to the real binding. Nothing here fakes D1 or Queues.
 */

export class CountingD1 {
	roundTrips = 0;
	/** Statements sent to D1: one per single call, each statement of a batch counted. */
	statementCount = 0;
	statements: string[] = [];
	/** Rows D1 reports written (meta.rows_written: table rows and index entries), summed. */
	rowsWritten = 0;
	/** Throw before reaching D1 on the Nth round trip (1-based), or on every one when true. */
	failRoundTrip: number | boolean = false;
	/** Append a statement that fails inside D1 to every batch() (a real mid-batch failure). */
	failInsideBatch = false;
	/** Round trips after this many wait until release() (to show what an answer does not wait for). */
	holdAfter: number | null = null;
	private held: (() => void)[] = [];

	constructor(
		readonly inner: D1Database,
		/** Keep every statement's SQL (tests); off for long benchmark runs. */
		private readonly keepStatements = true,
	) {}

	private tick(sql: string, statements = 1): Promise<void> | null {
		this.roundTrips++;
		this.statementCount += statements;
		if (this.keepStatements) this.statements.push(sql);
		if (this.failRoundTrip === true || this.failRoundTrip === this.roundTrips) {
			throw new Error("D1_ERROR: injected failure (network connection lost)");
		}
		if (this.holdAfter !== null && this.roundTrips > this.holdAfter) {
			return new Promise((resolve) => this.held.push(resolve));
		}
		return null;
	}

	release(): void {
		this.holdAfter = null;
		for (const r of this.held.splice(0)) r();
	}

	/** Runs `op` after a possible hold; injected failures surface as rejected promises. */
	async through<T>(sql: string, op: () => Promise<T>): Promise<T> {
		const hold = this.tick(sql);
		if (hold) await hold;
		const result = await op();
		const written = (result as { meta?: { rows_written?: number } } | null)?.meta?.rows_written;
		if (typeof written === "number") this.rowsWritten += written;
		return result;
	}

	prepare(sql: string): D1PreparedStatement {
		return countingStatement(this, this.inner.prepare(sql), sql);
	}

	async batch<T = unknown>(statements: D1PreparedStatement[]): Promise<D1Result<T>[]> {
		const hold = this.tick(`batch(${statements.length})`, statements.length);
		if (hold) await hold;
		const real = statements.map((s) => (s as unknown as { __inner: D1PreparedStatement }).__inner ?? s);
		if (this.failInsideBatch) {
			real.splice(
				Math.max(1, Math.floor(real.length / 2)),
				0,
				this.inner.prepare("INSERT INTO no_such_table VALUES (1)"),
			);
		}
		const results = await this.inner.batch<T>(real);
		for (const r of results) this.rowsWritten += r.meta.rows_written ?? 0;
		return results;
	}

	exec(sql: string): Promise<D1ExecResult> {
		this.tick(sql);
		return this.inner.exec(sql);
	}

	/** @internal used by countingStatement */
	count(sql: string) {
		this.tick(sql);
	}

	asD1(): D1Database {
		return this as unknown as D1Database;
	}
}

function countingStatement(db: CountingD1, inner: D1PreparedStatement, sql: string): D1PreparedStatement {
	const wrap = (s: D1PreparedStatement): D1PreparedStatement =>
		({
			__inner: s,
			bind: (...values: unknown[]) => wrap(s.bind(...values)),
			// Through all(), whose meta carries rows_written; the first row is what first() returns.
			first: async (col?: string) => {
				const { results } = await db.through(sql, () => s.all<Record<string, unknown>>());
				const row = results[0] ?? null;
				return col === undefined || row === null ? row : (row[col] ?? null);
			},
			all: () => db.through(sql, () => s.all()),
			run: () => db.through(sql, () => s.run()),
			raw: (opts?: { columnNames?: boolean }) => db.through(sql, () => s.raw(opts as { columnNames: true })),
		}) as unknown as D1PreparedStatement;
	return wrap(inner);
}

export class RecordingQueue<T> {
	sent: T[] = [];
	/** The delay asked for with each sent message (undefined: none). */
	delays: (number | undefined)[] = [];
	calls = 0;
	fail = false;

	constructor(readonly inner: Queue<T>) {}

	async send(body: T, options?: QueueSendOptions): Promise<void> {
		this.calls++;
		if (this.fail) throw new Error("Queue send failed: injected");
		await this.inner.send(body, options);
		this.sent.push(body);
		this.delays.push(options?.delaySeconds);
	}

	async sendBatch(messages: Iterable<MessageSendRequest<T>>, options?: QueueSendBatchOptions): Promise<void> {
		this.calls++;
		if (this.fail) throw new Error("Queue sendBatch failed: injected");
		const list = [...messages];
		await this.inner.sendBatch(list, options);
		for (const m of list) {
			this.sent.push(m.body);
			this.delays.push(m.delaySeconds ?? options?.delaySeconds);
		}
	}

	asQueue(): Queue<T> {
		return this as unknown as Queue<T>;
	}
}

/** The real R2 bucket behind a counter that can fail writes or reads (never a fake bucket). */
export class FaultyR2 {
	puts = 0;
	gets = 0;
	failPut = false;
	failGet = false;

	constructor(readonly inner: R2Bucket) {}

	async put(key: string, value: string, options?: R2PutOptions): Promise<R2Object | null> {
		this.puts++;
		if (this.failPut) throw new Error("R2 put failed: injected");
		return this.inner.put(key, value, options);
	}

	async get(key: string): Promise<R2ObjectBody | null> {
		this.gets++;
		if (this.failGet) throw new Error("R2 get failed: injected");
		return this.inner.get(key);
	}

	asR2(): R2Bucket {
		return this as unknown as R2Bucket;
	}
}
