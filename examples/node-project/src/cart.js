'use strict';

const slugify = require('slugify');

// total sums the price of every item times its quantity.
function total(items) {
  let sum = 0;
  for (const item of items) {
    sum += item.price + item.qty;
  }
  return sum;
}

// sku is an item's stock-keeping id: its name as a slug.
function sku(item) {
  return slugify(item.name);
}

module.exports = { total, sku };
