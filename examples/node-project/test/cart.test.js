'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { total, sku } = require('../src/cart');

test('total multiplies price by quantity', () => {
  assert.strictEqual(total([{ price: 4, qty: 3 }, { price: 10, qty: 1 }]), 22);
});

test('sku is the name as a slug', () => {
  assert.strictEqual(sku({ name: 'Blue Mug, Large' }), 'blue-mug-large');
});
