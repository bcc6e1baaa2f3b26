// The legacy Node client `azure-storage` 2.10.7 against `tableq serve`.
//
// Every table operation the client offers: tables (create, exists, list with paging, delete),
// entities of all eight EDM types (insert with and without echo, retrieve, replace and merge
// with ETags, insert-or-replace, insert-or-merge, delete), batches, queries with paging and
// projection in the three metadata levels, service properties and stats, table ACLs, table
// and account SAS, and the exact error codes of the failures it can provoke. Run by
// scripts/compat-tests.sh with TABLEQ_COMPAT_ENDPOINT=http://127.0.0.1:PORT/devstoreaccount1.
'use strict';

const { test, before } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const azure = require('azure-storage');

const ACCOUNT = 'devstoreaccount1';
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const WRONG_KEY = 'A'.repeat(86) + '==';
const gen = azure.TableUtilities.entityGenerator;
const FORMAT = azure.TableUtilities.PayloadFormat;
const ETAG_RE = /^W\/"datetime'\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\d(\.\d{1,7})?Z'"$/;

const endpoint = (process.env.TABLEQ_COMPAT_ENDPOINT || '').replace(/\/$/, '');
let svc;

function service(key = KEY) {
  // The host object form names the secondary too (the connection string has no key for it).
  return azure.createTableService(ACCOUNT, key, { primaryHost: endpoint, secondaryHost: `${endpoint}-secondary` });
}

function sasService(token) {
  return azure.createTableServiceWithSas(endpoint, token);
}

/** Calls `client[method](...args, cb)`; resolves to {result, response}, rejects with the error. */
function call(client, method, ...args) {
  return new Promise((resolve, reject) => {
    client[method](...args, (err, result, response) => {
      if (err) {
        reject(err);
      } else {
        resolve({ result, response });
      }
    });
  });
}

async function expectError(status, code, promise) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.statusCode, status, `status of ${err.message}`);
    assert.equal(err.code, code, `code of ${err.message}`);
    return true;
  });
}

function name(tag = 't') {
  return `njl${tag}${crypto.randomBytes(5).toString('hex')}`;
}

async function newTable() {
  const t = name();
  const { result } = await call(svc, 'createTable', t);
  assert.equal(result.TableName, t);
  return t;
}

function allTypes(pk, rk) {
  return {
    PartitionKey: gen.String(pk),
    RowKey: gen.String(rk),
    Str: gen.String("héllo 'quoted' é"),
    I32: gen.Int32(-2147483648),
    I64: gen.Int64('9007199254740993'),
    Dbl: gen.Double(3.25),
    Flag: gen.Boolean(true),
    When: gen.DateTime(new Date(Date.UTC(2021, 5, 9, 1, 17, 8, 379))),
    Id: gen.Guid('c9da6455-213d-42c9-9a79-3e9149a57833'),
    Bytes: gen.Binary(Buffer.from([0, 1, 0xfe, 0xff])),
  };
}

function checkAllTypes(e, { typed = true } = {}) {
  assert.equal(e.PartitionKey._, 'p');
  assert.equal(e.RowKey._, 'r1');
  assert.equal(e.Str._, "héllo 'quoted' é");
  assert.equal(e.I32._, -2147483648);
  assert.equal(e.Dbl._, 3.25);
  assert.equal(e.Flag._, true);
  if (typed) {
    assert.equal(e.I64._, '9007199254740993');
    assert.equal(e.I64.$, 'Edm.Int64');
    assert.ok(e.When._ instanceof Date);
    assert.equal(e.When._.toISOString(), '2021-06-09T01:17:08.379Z');
    assert.equal(e.When.$, 'Edm.DateTime');
    assert.equal(e.Id._, 'c9da6455-213d-42c9-9a79-3e9149a57833');
    assert.equal(e.Id.$, 'Edm.Guid');
    assert.ok(Buffer.isBuffer(e.Bytes._));
    assert.deepEqual([...e.Bytes._], [0, 1, 0xfe, 0xff]);
    assert.equal(e.Bytes.$, 'Edm.Binary');
  }
  assert.match(e['.metadata'].etag, ETAG_RE);
}

before(() => {
  assert.ok(endpoint, 'TABLEQ_COMPAT_ENDPOINT is not set: run scripts/compat-tests.sh');
  svc = service();
});

test('tables: create, exists, list with paging, delete', async () => {
  const names = [name('list'), name('list'), name('list')].sort();
  for (const t of names) {
    await call(svc, 'createTable', t);
  }
  const again = await call(svc, 'createTableIfNotExists', names[0]);
  assert.equal(again.result.created, false);
  await expectError(409, 'TableAlreadyExists', call(svc, 'createTable', names[0]));
  assert.equal((await call(svc, 'doesTableExist', names[1])).result.exists, true);
  const page = await call(svc, 'listTablesSegmentedWithPrefix', 'njllist', null, { maxResults: 2 });
  assert.equal(page.result.entries.length, 2);
  assert.ok(page.result.continuationToken, 'a continuation after 2 tables');
  const listed = [...page.result.entries];
  let token = page.result.continuationToken;
  while (token) {
    const next = await call(svc, 'listTablesSegmentedWithPrefix', 'njllist', token, { maxResults: 2 });
    listed.push(...next.result.entries);
    token = next.result.continuationToken;
  }
  for (const t of names) {
    assert.ok(listed.includes(t), `${t} listed`);
  }
  for (const t of names) {
    await call(svc, 'deleteTable', t);
  }
  assert.equal((await call(svc, 'doesTableExist', names[1])).result.exists, false);
  assert.equal((await call(svc, 'deleteTableIfExists', names[0])).result, false);
  await expectError(404, 'ResourceNotFound', call(svc, 'deleteTable', names[0]));
  // (invalid table names never reach the server: the client validates them)
});

test('entities: all eight types through insert, retrieve and query in each metadata level', async () => {
  const t = await newTable();
  const inserted = await call(svc, 'insertEntity', t, allTypes('p', 'r1'), { echoContent: true });
  checkAllTypes(inserted.result);
  const plain = await call(svc, 'insertEntity', t, allTypes('p', 'r2'));
  assert.match(plain.result['.metadata'].etag, ETAG_RE);
  for (const payloadFormat of [FORMAT.MINIMAL_METADATA, FORMAT.FULL_METADATA]) {
    const got = await call(svc, 'retrieveEntity', t, 'p', 'r1', { payloadFormat });
    checkAllTypes(got.result);
    assert.equal(got.result['.metadata'].etag, inserted.result['.metadata'].etag);
    assert.ok(got.result.Timestamp._ instanceof Date);
    const query = new azure.TableQuery().where('RowKey eq ?', 'r1');
    const q = await call(svc, 'queryEntities', t, query, null, { payloadFormat });
    assert.equal(q.result.entries.length, 1);
    checkAllTypes(q.result.entries[0]);
  }
  // Full metadata annotates what the service annotates: not Int32 nor Boolean nor String,
  // nor a finite Double (its recorded replies: `"ratio": 3.1`, `"double": 5.0` bare).
  const full = await call(svc, 'retrieveEntity', t, 'p', 'r1', { payloadFormat: FORMAT.FULL_METADATA });
  const body = full.response.body;
  assert.equal(body['I32@odata.type'], undefined, 'Int32 is not annotated');
  assert.equal(body['Flag@odata.type'], undefined, 'Boolean is not annotated');
  assert.equal(body['Str@odata.type'], undefined, 'String is not annotated');
  assert.equal(body['I64@odata.type'], 'Edm.Int64');
  assert.equal(body['Dbl@odata.type'], undefined, 'a finite Double is not annotated');
  assert.equal(body.Dbl, 3.25);
  assert.equal(body['odata.type'], `${ACCOUNT}.${t}`);
  // No metadata: bare values, which autoResolveProperties types as the client can.
  const none = await call(svc, 'retrieveEntity', t, 'p', 'r1', {
    payloadFormat: FORMAT.NO_METADATA, autoResolveProperties: true,
  });
  checkAllTypes(none.result, { typed: false });
  assert.equal(none.result.I64._, '9007199254740993');
  assert.equal(none.result.Flag.$, 'Edm.Boolean');
  // projection
  const sel = await call(svc, 'queryEntities', t, new azure.TableQuery().select('Str', 'I64'), null);
  assert.equal(sel.result.entries.length, 2);
  assert.equal(sel.result.entries[0].Str._, "héllo 'quoted' é");
  assert.equal(sel.result.entries[0].Dbl, undefined);
  await call(svc, 'deleteTable', t);
});

test('entities: replace and merge with ETags, insert-or-replace, insert-or-merge, delete', async () => {
  const t = await newTable();
  const e1 = await call(svc, 'insertEntity', t, { PartitionKey: gen.String('p'), RowKey: gen.String('r'), A: gen.String('a') });
  const etag1 = e1.result['.metadata'].etag;
  const replaced = await call(svc, 'replaceEntity', t, {
    PartitionKey: gen.String('p'), RowKey: gen.String('r'), C: gen.String('c'), '.metadata': { etag: etag1 },
  });
  const etag2 = replaced.result['.metadata'].etag;
  assert.match(etag2, ETAG_RE);
  assert.notEqual(etag2, etag1);
  let got = (await call(svc, 'retrieveEntity', t, 'p', 'r')).result;
  assert.equal(got.C._, 'c');
  assert.equal(got.A, undefined);
  await expectError(412, 'UpdateConditionNotSatisfied', call(svc, 'replaceEntity', t, {
    PartitionKey: gen.String('p'), RowKey: gen.String('r'), '.metadata': { etag: etag1 },
  }));
  await call(svc, 'mergeEntity', t, {
    PartitionKey: gen.String('p'), RowKey: gen.String('r'), D: gen.Double(2.5), '.metadata': { etag: etag2 },
  });
  got = (await call(svc, 'retrieveEntity', t, 'p', 'r')).result;
  assert.equal(got.C._, 'c');
  assert.equal(got.D._, 2.5);
  await expectError(412, 'UpdateConditionNotSatisfied', call(svc, 'mergeEntity', t, {
    PartitionKey: gen.String('p'), RowKey: gen.String('r'), '.metadata': { etag: etag2 },
  }));
  await expectError(412, 'UpdateConditionNotSatisfied', call(svc, 'deleteEntity', t, {
    PartitionKey: gen.String('p'), RowKey: gen.String('r'), '.metadata': { etag: etag2 },
  }));
  // without an ETag: unconditional
  await call(svc, 'mergeEntity', t, { PartitionKey: gen.String('p'), RowKey: gen.String('r'), E: gen.Boolean(false) });
  await call(svc, 'insertOrReplaceEntity', t, { PartitionKey: gen.String('p'), RowKey: gen.String('x'), A: gen.String('a') });
  await call(svc, 'insertOrMergeEntity', t, { PartitionKey: gen.String('p'), RowKey: gen.String('x'), B: gen.Int64('5') });
  got = (await call(svc, 'retrieveEntity', t, 'p', 'x')).result;
  assert.equal(got.A._, 'a');
  assert.equal(got.B._, '5');
  await call(svc, 'insertOrReplaceEntity', t, { PartitionKey: gen.String('p'), RowKey: gen.String('x'), Z: gen.Int32(1) });
  got = (await call(svc, 'retrieveEntity', t, 'p', 'x')).result;
  assert.equal(got.A, undefined);
  assert.equal(got.Z._, 1);
  await call(svc, 'deleteEntity', t, { PartitionKey: gen.String('p'), RowKey: gen.String('x') });
  await expectError(404, 'ResourceNotFound', call(svc, 'retrieveEntity', t, 'p', 'x'));
  await call(svc, 'deleteTable', t);
});

test('entities: the error codes of the failures', async () => {
  const t = await newTable();
  const key = { PartitionKey: gen.String('p'), RowKey: gen.String('r') };
  await call(svc, 'insertEntity', t, key);
  await expectError(409, 'EntityAlreadyExists', call(svc, 'insertEntity', t, key));
  const missing = { PartitionKey: gen.String('p'), RowKey: gen.String('missing') };
  await expectError(404, 'ResourceNotFound', call(svc, 'retrieveEntity', t, 'p', 'missing'));
  await expectError(404, 'ResourceNotFound', call(svc, 'replaceEntity', t, missing));
  await expectError(404, 'ResourceNotFound', call(svc, 'mergeEntity', t, missing));
  await expectError(404, 'ResourceNotFound', call(svc, 'deleteEntity', t, missing));
  const gone = name('gone');
  await expectError(404, 'TableNotFound', call(svc, 'insertEntity', gone, key));
  await expectError(404, 'TableNotFound', call(svc, 'retrieveEntity', gone, 'p', 'r'));
  await expectError(400, 'PropertyNameInvalid', call(svc, 'insertEntity', t, {
    PartitionKey: gen.String('p'), RowKey: gen.String('bad'), 'bad name': gen.String('x'),
  }));
  await expectError(400, 'InvalidInput', call(svc, 'queryEntities', t, new azure.TableQuery().where('PartitionKey eq'), null));
  await expectError(403, 'AuthenticationFailed', call(service(WRONG_KEY), 'retrieveEntity', t, 'p', 'r'));
  await call(svc, 'deleteTable', t);
});

test('queries: paging with top, a filter and continuation tokens', async () => {
  const t = await newTable();
  for (let i = 0; i < 25; i++) {
    await call(svc, 'insertEntity', t, { PartitionKey: gen.String('p'), RowKey: gen.String(`r${String(i).padStart(3, '0')}`), N: gen.Int32(i) });
  }
  const seen = [];
  let token = null;
  let pages = 0;
  do {
    const query = new azure.TableQuery().where('N ge ?', 3).top(4);
    const { result } = await call(svc, 'queryEntities', t, query, token);
    assert.ok(result.entries.length <= 4);
    seen.push(...result.entries.map((e) => e.N._));
    token = result.continuationToken;
    pages++;
  } while (token);
  assert.deepEqual(seen, Array.from({ length: 22 }, (_, i) => i + 3));
  assert.ok(pages >= 6);
  const q = new azure.TableQuery().where('PartitionKey eq ?', 'p').and('RowKey lt ?', 'r005');
  assert.equal((await call(svc, 'queryEntities', t, q, null)).result.entries.length, 5);
  await call(svc, 'deleteTable', t);
});

test('batches: every operation, atomic failure with the failing index', async () => {
  const t = await newTable();
  const k = (rk) => ({ PartitionKey: gen.String('b'), RowKey: gen.String(rk) });
  await call(svc, 'insertEntity', t, { ...k('upd'), V: gen.String('old') });
  await call(svc, 'insertEntity', t, { ...k('mrg'), V: gen.String('old') });
  await call(svc, 'insertEntity', t, k('del'));
  const etag = (await call(svc, 'retrieveEntity', t, 'b', 'upd')).result['.metadata'].etag;
  const batch = new azure.TableBatch();
  batch.insertEntity(allTypes('b', 'ins'), { echoContent: true });
  batch.replaceEntity({ ...k('upd'), V: gen.String('new'), '.metadata': { etag } });
  batch.mergeEntity({ ...k('mrg'), W: gen.String('w') });
  batch.deleteEntity(k('del'));
  batch.insertOrReplaceEntity({ ...k('ior'), V: gen.Double(1.5) });
  batch.insertOrMergeEntity({ ...k('iom'), V: gen.Boolean(false) });
  const { result } = await call(svc, 'executeBatch', t, batch);
  assert.equal(result.length, 6);
  for (const r of result) {
    assert.ok(!r.error, JSON.stringify(r.error));
    assert.ok(r.response.isSuccessful);
  }
  assert.equal(result[0].response.statusCode, 201);
  assert.equal(result[0].entity.I64._, '9007199254740993');
  const { result: all } = await call(svc, 'queryEntities', t, new azure.TableQuery().where('PartitionKey eq ?', 'b'), null);
  const rows = Object.fromEntries(all.entries.map((e) => [e.RowKey._, e]));
  assert.deepEqual(Object.keys(rows).sort(), ['ins', 'iom', 'ior', 'mrg', 'upd']);
  assert.equal(rows.upd.V._, 'new');
  assert.equal(rows.mrg.W._, 'w');
  assert.equal(rows.mrg.V._, 'old');
  assert.equal(rows.ior.V._, 1.5);
  assert.equal(rows.iom.V._, false);
  // a retrieve alone in a batch
  const single = new azure.TableBatch();
  single.retrieveEntity('b', 'ins');
  const { result: one } = await call(svc, 'executeBatch', t, single);
  assert.equal(one.length, 1);
  assert.equal(one[0].entity.Str._, "héllo 'quoted' é");
  // failure: the second operation inserts an existing entity; nothing is applied
  const failing = new azure.TableBatch();
  failing.insertEntity(k('new1'));
  failing.insertEntity(k('ins'));
  await assert.rejects(call(svc, 'executeBatch', t, failing), (err) => {
    assert.equal(err.statusCode, 409, err.message);
    assert.equal(err.code, 'EntityAlreadyExists', err.message);
    assert.match(err.message, /^1:/); // the index of the failing operation
    return true;
  });
  await expectError(404, 'ResourceNotFound', call(svc, 'retrieveEntity', t, 'b', 'new1'));
  await call(svc, 'deleteTable', t);
});

test('service properties round trip, errors, and stats on the secondary', async () => {
  const props = {
    Logging: { Version: '1.0', Delete: true, Read: false, Write: true, RetentionPolicy: { Enabled: true, Days: 5 } },
    HourMetrics: { Version: '1.0', Enabled: true, IncludeAPIs: true, RetentionPolicy: { Enabled: true, Days: 7 } },
    MinuteMetrics: { Version: '1.0', Enabled: false, RetentionPolicy: { Enabled: false } },
    Cors: {
      CorsRule: [{
        AllowedOrigins: ['http://example.com', 'http://other.example'],
        AllowedMethods: ['GET', 'PUT', 'MERGE'],
        AllowedHeaders: ['x-ms-meta-abc', 'x-ms-meta-data*'],
        ExposedHeaders: ['x-ms-meta-*'],
        MaxAgeInSeconds: 60,
      }],
    },
  };
  try {
    await call(svc, 'setServiceProperties', props);
    const { result } = await call(svc, 'getServiceProperties');
    assert.equal(result.Logging.Delete, true);
    assert.equal(result.Logging.Read, false);
    assert.equal(result.Logging.RetentionPolicy.Days, 5);
    assert.equal(result.HourMetrics.Enabled, true);
    assert.equal(result.HourMetrics.IncludeAPIs, true);
    assert.equal(result.MinuteMetrics.Enabled, false);
    assert.equal(result.Cors.CorsRule.length, 1);
    assert.deepEqual(result.Cors.CorsRule[0].AllowedOrigins, ['http://example.com', 'http://other.example']);
    assert.deepEqual(result.Cors.CorsRule[0].AllowedMethods, ['GET', 'PUT', 'MERGE']);
    assert.equal(result.Cors.CorsRule[0].MaxAgeInSeconds, 60);
    const six = { Cors: { CorsRule: Array.from({ length: 6 }, () => ({ AllowedOrigins: ['*'], AllowedMethods: ['GET'], AllowedHeaders: [], ExposedHeaders: [], MaxAgeInSeconds: 1 })) } };
    // The service answers six CORS rules with InvalidXmlDocument (recorded replies).
    await expectError(400, 'InvalidXmlDocument', call(svc, 'setServiceProperties', six));
  } finally {
    await call(svc, 'setServiceProperties', {
      Logging: { Version: '1.0', Delete: false, Read: false, Write: false, RetentionPolicy: { Enabled: false } },
      HourMetrics: { Version: '1.0', Enabled: false, RetentionPolicy: { Enabled: false } },
      MinuteMetrics: { Version: '1.0', Enabled: false, RetentionPolicy: { Enabled: false } },
      Cors: {},
    });
  }
  const { result: after } = await call(svc, 'getServiceProperties');
  assert.equal(after.Logging.Delete, false);
  const { result: stats } = await call(svc, 'getServiceStats', { locationMode: azure.StorageUtilities.LocationMode.SECONDARY_ONLY });
  assert.equal(stats.GeoReplication.Status, 'live');
  assert.ok(stats.GeoReplication.LastSyncTime instanceof Date);
});

test('table ACL round trip', async () => {
  const t = await newTable();
  const start = new Date(Date.UTC(2030, 0, 1));
  const expiry = new Date(Date.UTC(2031, 0, 1));
  await call(svc, 'setTableAcl', t, {
    read: { Permissions: 'r', Start: start, Expiry: expiry },
    all: { Permissions: 'raud', Expiry: expiry },
  });
  const { result } = await call(svc, 'getTableAcl', t);
  assert.deepEqual(Object.keys(result.signedIdentifiers).sort(), ['all', 'read']);
  assert.equal(result.signedIdentifiers.read.Permissions, 'r');
  assert.equal(new Date(result.signedIdentifiers.read.Start).getTime(), start.getTime());
  assert.equal(result.signedIdentifiers.all.Permissions, 'raud');
  await call(svc, 'setTableAcl', t, {});
  assert.deepEqual(Object.keys((await call(svc, 'getTableAcl', t)).result.signedIdentifiers || {}), []);
  // The ACL of a missing table: 404 ResourceNotFound, as the service answers it (XML).
  await expectError(404, 'ResourceNotFound', call(svc, 'getTableAcl', name('gone')));
  await call(svc, 'deleteTable', t);
});

test('table SAS: permissions, key ranges, expiry and a stored policy', async () => {
  const t = await newTable();
  await call(svc, 'insertEntity', t, { PartitionKey: gen.String('p1'), RowKey: gen.String('r1'), V: gen.Int32(1) });
  const hour = new Date(Date.now() + 3600e3);
  const reader = sasService(svc.generateSharedAccessSignature(t, { AccessPolicy: { Permissions: 'r', Expiry: hour } }));
  assert.equal((await call(reader, 'retrieveEntity', t, 'p1', 'r1')).result.V._, 1);
  assert.equal((await call(reader, 'queryEntities', t, null, null)).result.entries.length, 1);
  await expectError(403, 'AuthorizationPermissionMismatch', call(reader, 'insertEntity', t, { PartitionKey: gen.String('p1'), RowKey: gen.String('x') }));
  const ranged = sasService(svc.generateSharedAccessSignature(t, {
    AccessPolicy: { Permissions: 'raud', Expiry: hour, StartPk: 'p1', StartRk: 'a', EndPk: 'p1', EndRk: 'z' },
  }));
  await call(ranged, 'insertEntity', t, { PartitionKey: gen.String('p1'), RowKey: gen.String('m') });
  await call(ranged, 'deleteEntity', t, { PartitionKey: gen.String('p1'), RowKey: gen.String('m') });
  await expectError(403, 'AuthorizationFailure', call(ranged, 'insertEntity', t, { PartitionKey: gen.String('p2'), RowKey: gen.String('m') }));
  const expired = sasService(svc.generateSharedAccessSignature(t, { AccessPolicy: { Permissions: 'r', Expiry: new Date(Date.now() - 3600e3) } }));
  await expectError(403, 'AuthenticationFailed', call(expired, 'retrieveEntity', t, 'p1', 'r1'));
  await call(svc, 'setTableAcl', t, { pol: { Permissions: 'r', Expiry: hour } });
  const viaPolicy = sasService(svc.generateSharedAccessSignature(t, { Id: 'pol' }));
  assert.equal((await call(viaPolicy, 'retrieveEntity', t, 'p1', 'r1')).result.V._, 1);
  await call(svc, 'setTableAcl', t, {});
  await expectError(403, 'AuthenticationFailed', call(viaPolicy, 'retrieveEntity', t, 'p1', 'r1'));
  await call(svc, 'deleteTable', t);
});

test('account SAS: services, resource types and permissions', async () => {
  const t = await newTable();
  await call(svc, 'insertEntity', t, { PartitionKey: gen.String('p'), RowKey: gen.String('r') });
  const policy = (resourceTypes, permissions) => ({
    AccessPolicy: { Services: 't', ResourceTypes: resourceTypes, Permissions: permissions, Expiry: new Date(Date.now() + 3600e3) },
  });
  const full = sasService(azure.generateAccountSharedAccessSignature(ACCOUNT, KEY, policy('sco', 'rwdlacu')));
  const t2 = name('acct');
  await call(full, 'createTable', t2);
  await call(full, 'insertEntity', t2, { PartitionKey: gen.String('p'), RowKey: gen.String('r'), V: gen.String('v') });
  assert.equal((await call(full, 'retrieveEntity', t2, 'p', 'r')).result.V._, 'v');
  assert.ok((await call(full, 'getServiceProperties')).result.Logging);
  await call(full, 'deleteTable', t2);
  const objectsOnly = sasService(azure.generateAccountSharedAccessSignature(ACCOUNT, KEY, policy('o', 'r')));
  assert.equal((await call(objectsOnly, 'retrieveEntity', t, 'p', 'r')).result.RowKey._, 'r');
  await expectError(403, 'AuthorizationResourceTypeMismatch', call(objectsOnly, 'createTable', name('no')));
  await expectError(403, 'AuthorizationPermissionMismatch', call(objectsOnly, 'insertEntity', t, { PartitionKey: gen.String('p'), RowKey: gen.String('x') }));
  await call(svc, 'deleteTable', t);
});
