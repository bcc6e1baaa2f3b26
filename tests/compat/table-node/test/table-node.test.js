// `azure-table-node` 1.5.0 (JSON on the wire, x-ms-version 2013-08-15, SAS sv=2013-08-15)
// against `tableq serve`.
//
// Every operation the client offers: tables (create, ignoreIfExists, list with paging,
// delete), entities of all eight EDM types as it maps them (string, Int32 and Double numbers,
// Int64 numbers past 2^31, boolean, Date, Guid-shaped strings, Buffer), insert with and
// without the entity returned, get with a projection, update and merge with ETags and with
// `force`, insert-or-replace, insert-or-merge, delete, queries with a filter, a limit and
// continuations in the three metadata levels, batches, and the table SAS it generates (its
// only SAS kind) — with the exact error codes of the failures it can provoke. It offers no
// service properties, ACLs or account SAS. Run by scripts/compat-tests.sh with
// TABLEQ_COMPAT_ENDPOINT=http://127.0.0.1:PORT/devstoreaccount1.
'use strict';

const { test, before } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const azureTable = require('azure-table-node');

const ACCOUNT = 'devstoreaccount1';
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const WRONG_KEY = 'A'.repeat(86) + '==';
const ETAG_RE = /^W\/"datetime'\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\d(\.\d{1,7})?Z'"$/;
const endpoint = (process.env.TABLEQ_COMPAT_ENDPOINT || '').replace(/\/$/, '');
let client;

function makeClient(settings = {}) {
  return azureTable.createClient({
    accountUrl: `${endpoint}/`,
    accountName: ACCOUNT,
    accountKey: KEY,
    retry: false,
    timeout: 30000,
    ...settings,
  });
}

/** Calls `c[method](...args, cb)`; resolves to [data, continuation], rejects with the error. */
function call(c, method, ...args) {
  return new Promise((resolve, reject) => {
    c[method](...args, (err, data, continuation) => (err ? reject(err) : resolve([data, continuation])));
  });
}

async function expectError(status, code, promise) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.statusCode, status, `status of ${JSON.stringify(err)}`);
    assert.equal(err.code, code, `code of ${JSON.stringify(err)}`);
    return true;
  });
}

function name(tag = 't') {
  return `njt${tag}${crypto.randomBytes(5).toString('hex')}`;
}

async function newTable() {
  const t = name();
  await call(client, 'createTable', t);
  return t;
}

const WHEN = new Date(Date.UTC(2021, 5, 9, 1, 17, 8, 379));
function allTypes(pk, rk) {
  return {
    PartitionKey: pk,
    RowKey: rk,
    Str: "héllo 'quoted' é",
    I32: -2147483647,
    I64: 1099511627776, // 2^40: sent as Edm.Int64, read back as a number
    Dbl: 3.25,
    Flag: true,
    When: WHEN,
    Id: 'c9da6455-213d-42c9-9a79-3e9149a57833',
    Bytes: Buffer.from([0, 1, 0xfe, 0xff]),
  };
}

function checkAllTypes(e) {
  assert.equal(e.PartitionKey, 'p');
  assert.equal(e.RowKey, 'r1');
  assert.equal(e.Str, "héllo 'quoted' é");
  assert.equal(e.I32, -2147483647);
  assert.equal(e.I64, 1099511627776);
  assert.equal(e.Dbl, 3.25);
  assert.equal(e.Flag, true);
  assert.ok(e.When instanceof Date);
  assert.equal(e.When.getTime(), WHEN.getTime());
  assert.equal(e.Id, 'c9da6455-213d-42c9-9a79-3e9149a57833');
  assert.ok(Buffer.isBuffer(e.Bytes));
  assert.deepEqual([...e.Bytes], [0, 1, 0xfe, 0xff]);
  assert.ok(e.Timestamp instanceof Date && !Number.isNaN(e.Timestamp.getTime()));
}

before(() => {
  assert.ok(endpoint, 'TABLEQ_COMPAT_ENDPOINT is not set: run scripts/compat-tests.sh');
  client = makeClient();
});

test('tables: create, ignoreIfExists, list with paging, delete', async () => {
  const names = [name('list'), name('list'), name('list')];
  for (const t of names) {
    await call(client, 'createTable', t);
  }
  await call(client, 'createTable', names[0], { ignoreIfExists: true });
  await expectError(409, 'TableAlreadyExists', call(client, 'createTable', names[0]));
  const listed = [];
  let next;
  let pages = 0;
  do {
    const [data, continuation] = await call(client, 'listTables', next ? { nextTableName: next } : {});
    listed.push(...data);
    next = continuation;
    pages++;
  } while (next && pages < 100);
  for (const t of names) {
    assert.ok(listed.includes(t), `${t} listed`);
  }
  for (const t of names) {
    await call(client, 'deleteTable', t);
  }
  await expectError(404, 'ResourceNotFound', call(client, 'deleteTable', names[0]));
  await expectError(400, 'InvalidResourceName', call(client, 'createTable', '1abc'));
});

test('entities: all eight types in insert, get and query, in each metadata level', async () => {
  const t = await newTable();
  const [etag] = await call(client, 'insertEntity', t, allTypes('p', 'r1'));
  assert.match(etag, ETAG_RE);
  const [echo] = await call(client, 'insertEntity', t, allTypes('p', 'r2'), { returnEntity: true });
  assert.equal(echo.RowKey, 'r2');
  assert.equal(echo.I64, 1099511627776);
  assert.match(echo.__etag, ETAG_RE);
  for (const metadata of ['minimal', 'full']) {
    const c = makeClient({ metadata });
    const [got] = await call(c, 'getEntity', t, 'p', 'r1');
    checkAllTypes(got);
    assert.equal(got.__etag, etag);
    const [rows] = await call(c, 'queryEntities', t, { query: azureTable.Query.create('RowKey', '==', 'r1'), forceEtags: true });
    assert.equal(rows.length, 1);
    checkAllTypes(rows[0]);
  }
  const [bare] = await call(makeClient({ metadata: 'no' }), 'getEntity', t, 'p', 'r1');
  assert.equal(bare.I64, '1099511627776'); // no type: the string as sent
  assert.equal(bare.Flag, true);
  assert.equal(bare.Str, "héllo 'quoted' é");
  const [sel] = await call(client, 'getEntity', t, 'p', 'r1', { onlyFields: ['Str', 'Flag'] });
  assert.equal(sel.Str, "héllo 'quoted' é");
  assert.equal(sel.Flag, true);
  assert.equal(sel.Dbl, undefined);
  await call(client, 'deleteTable', t);
});

test('entities: update and merge with ETags and force, upserts, delete', async () => {
  const t = await newTable();
  const [etag1] = await call(client, 'insertEntity', t, { PartitionKey: 'p', RowKey: 'r', A: 'a' });
  const [etag2] = await call(client, 'updateEntity', t, { PartitionKey: 'p', RowKey: 'r', C: 'c', __etag: etag1 });
  assert.match(etag2, ETAG_RE);
  assert.notEqual(etag2, etag1);
  let [got] = await call(client, 'getEntity', t, 'p', 'r');
  assert.equal(got.C, 'c');
  assert.equal(got.A, undefined);
  await expectError(412, 'UpdateConditionNotSatisfied', call(client, 'updateEntity', t, { PartitionKey: 'p', RowKey: 'r', __etag: etag1 }));
  const [etag3] = await call(client, 'mergeEntity', t, { PartitionKey: 'p', RowKey: 'r', D: 2.5, __etag: etag2 });
  [got] = await call(client, 'getEntity', t, 'p', 'r');
  assert.equal(got.C, 'c');
  assert.equal(got.D, 2.5);
  assert.equal(got.__etag, etag3);
  await expectError(412, 'UpdateConditionNotSatisfied', call(client, 'mergeEntity', t, { PartitionKey: 'p', RowKey: 'r', __etag: etag2 }));
  await expectError(412, 'UpdateConditionNotSatisfied', call(client, 'deleteEntity', t, { PartitionKey: 'p', RowKey: 'r', __etag: etag2 }));
  await call(client, 'mergeEntity', t, { PartitionKey: 'p', RowKey: 'r', E: false }, { force: true });
  await call(client, 'updateEntity', t, { PartitionKey: 'p', RowKey: 'r', F: 'f' }, { force: true });
  [got] = await call(client, 'getEntity', t, 'p', 'r');
  assert.equal(got.F, 'f');
  assert.equal(got.C, undefined);
  const [e1] = await call(client, 'insertOrReplaceEntity', t, { PartitionKey: 'p', RowKey: 'x', A: 'a' });
  assert.match(e1, ETAG_RE);
  await call(client, 'insertOrMergeEntity', t, { PartitionKey: 'p', RowKey: 'x', B: 5 });
  [got] = await call(client, 'getEntity', t, 'p', 'x');
  assert.equal(got.A, 'a');
  assert.equal(got.B, 5);
  await call(client, 'insertOrReplaceEntity', t, { PartitionKey: 'p', RowKey: 'x', Z: 1 });
  [got] = await call(client, 'getEntity', t, 'p', 'x');
  assert.equal(got.A, undefined);
  await call(client, 'deleteEntity', t, { PartitionKey: 'p', RowKey: 'x', __etag: got.__etag });
  await call(client, 'deleteEntity', t, { PartitionKey: 'p', RowKey: 'r' }, { force: true });
  await expectError(404, 'ResourceNotFound', call(client, 'getEntity', t, 'p', 'x'));
  await call(client, 'deleteTable', t);
});

test('entities: the error codes of the failures', async () => {
  const t = await newTable();
  await call(client, 'insertEntity', t, { PartitionKey: 'p', RowKey: 'r' });
  await expectError(409, 'EntityAlreadyExists', call(client, 'insertEntity', t, { PartitionKey: 'p', RowKey: 'r' }));
  await expectError(404, 'ResourceNotFound', call(client, 'getEntity', t, 'p', 'missing'));
  await expectError(404, 'ResourceNotFound', call(client, 'updateEntity', t, { PartitionKey: 'p', RowKey: 'missing' }, { force: true }));
  await expectError(404, 'ResourceNotFound', call(client, 'mergeEntity', t, { PartitionKey: 'p', RowKey: 'missing' }, { force: true }));
  await expectError(404, 'ResourceNotFound', call(client, 'deleteEntity', t, { PartitionKey: 'p', RowKey: 'missing' }, { force: true }));
  await expectError(404, 'TableNotFound', call(client, 'insertEntity', name('gone'), { PartitionKey: 'p', RowKey: 'r' }));
  await expectError(400, 'PropertyNameInvalid', call(client, 'insertEntity', t, { PartitionKey: 'p', RowKey: 'x', 'bad name': 1 }));
  await expectError(400, 'InvalidInput', call(client, 'queryEntities', t, { query: 'PartitionKey eq' }));
  await expectError(403, 'AuthenticationFailed', call(makeClient({ accountKey: WRONG_KEY }), 'getEntity', t, 'p', 'r'));
  await call(client, 'deleteTable', t);
});

test('queries: a filter, limitTo and continuations', async () => {
  const t = await newTable();
  const batch = client.startBatch();
  for (let i = 0; i < 25; i++) {
    batch.insertEntity(t, { PartitionKey: 'p', RowKey: `r${String(i).padStart(3, '0')}`, N: i });
  }
  const [results] = await call(batch, 'commit');
  assert.equal(results.length, 25);
  const seen = [];
  let continuation;
  let pages = 0;
  do {
    const options = { query: azureTable.Query.create('N', '>=', 3), limitTo: 4 };
    if (continuation) {
      options.continuation = continuation;
    }
    const [rows, next] = await call(client, 'queryEntities', t, options);
    assert.ok(rows.length <= 4);
    seen.push(...rows.map((e) => e.N));
    continuation = next;
    pages++;
  } while (continuation);
  assert.deepEqual(seen, Array.from({ length: 22 }, (_, i) => i + 3));
  assert.ok(pages >= 6);
  const q = azureTable.Query.create('PartitionKey', '==', 'p').and('RowKey', '<', 'r005').and('N', '!=', 2);
  const [few] = await call(client, 'queryEntities', t, { query: q, onlyFields: ['N'] });
  assert.deepEqual(few.map((e) => e.N), [0, 1, 3, 4]);
  await call(client, 'deleteTable', t);
});

test('batches: every operation, and a failing batch with its index', async () => {
  const t = await newTable();
  await call(client, 'insertEntity', t, { PartitionKey: 'b', RowKey: 'upd', V: 'old' });
  await call(client, 'insertEntity', t, { PartitionKey: 'b', RowKey: 'mrg', V: 'old' });
  await call(client, 'insertEntity', t, { PartitionKey: 'b', RowKey: 'del' });
  const [upd] = await call(client, 'getEntity', t, 'b', 'upd');
  const batch = client.startBatch()
    .insertEntity(t, allTypes('b', 'ins'))
    .updateEntity(t, { PartitionKey: 'b', RowKey: 'upd', V: 'new', __etag: upd.__etag })
    .mergeEntity(t, { PartitionKey: 'b', RowKey: 'mrg', W: 'w' }, { force: true })
    .deleteEntity(t, { PartitionKey: 'b', RowKey: 'del' }, { force: true })
    .insertOrReplaceEntity(t, { PartitionKey: 'b', RowKey: 'ior', V: 1.5 })
    .insertOrMergeEntity(t, { PartitionKey: 'b', RowKey: 'iom', V: false });
  const [results] = await call(batch, 'commit');
  assert.equal(results.length, 6);
  const [rows] = await call(client, 'queryEntities', t, { query: azureTable.Query.create('PartitionKey', '==', 'b') });
  const byKey = Object.fromEntries(rows.map((e) => [e.RowKey, e]));
  assert.deepEqual(Object.keys(byKey).sort(), ['ins', 'iom', 'ior', 'mrg', 'upd']);
  assert.equal(byKey.upd.V, 'new');
  assert.equal(byKey.mrg.W, 'w');
  assert.equal(byKey.mrg.V, 'old');
  assert.equal(byKey.ior.V, 1.5);
  assert.equal(byKey.iom.V, false);
  assert.equal(byKey.ins.I64, 1099511627776);
  const failing = client.startBatch()
    .insertEntity(t, { PartitionKey: 'b', RowKey: 'new1' })
    .insertEntity(t, { PartitionKey: 'b', RowKey: 'ins' });
  await assert.rejects(call(failing, 'commit'), (err) => {
    assert.equal(err.statusCode, 409, JSON.stringify(err));
    assert.equal(err.code, 'EntityAlreadyExists', JSON.stringify(err));
    return true;
  });
  await expectError(404, 'ResourceNotFound', call(client, 'getEntity', t, 'b', 'new1'));
  await call(client, 'deleteTable', t);
});

test('table SAS (sv=2013-08-15): permissions, key ranges, expiry, a stored policy', async () => {
  const t = await newTable();
  await call(client, 'insertEntity', t, { PartitionKey: 'p1', RowKey: 'r1', V: 1 });
  const hour = new Date(Date.now() + 3600e3);
  const sasClient = (sas) => makeClient({ accountKey: null, sas });
  const reader = sasClient(client.generateSAS(t, 'r', hour));
  const [got] = await call(reader, 'getEntity', t, 'p1', 'r1');
  assert.equal(got.V, 1);
  const [rows] = await call(reader, 'queryEntities', t, {});
  assert.equal(rows.length, 1);
  await expectError(403, 'AuthorizationPermissionMismatch', call(reader, 'insertEntity', t, { PartitionKey: 'p1', RowKey: 'x' }));
  const ranged = sasClient(client.generateSAS(t, 'raud', hour, { startPK: 'p1', startRK: 'a', endPK: 'p1', endRK: 'z' }));
  await call(ranged, 'insertEntity', t, { PartitionKey: 'p1', RowKey: 'm' });
  await call(ranged, 'deleteEntity', t, { PartitionKey: 'p1', RowKey: 'm' }, { force: true });
  await expectError(403, 'AuthorizationFailure', call(ranged, 'insertEntity', t, { PartitionKey: 'p2', RowKey: 'm' }));
  const expired = sasClient(client.generateSAS(t, 'r', new Date(Date.now() - 3600e3)));
  await expectError(403, 'AuthenticationFailed', call(expired, 'getEntity', t, 'p1', 'r1'));
  await call(client, 'deleteTable', t);
});
