'use strict';

// slugify('Hello, World') === 'hello-world'
module.exports = function slugify(s) {
  return String(s).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
};
